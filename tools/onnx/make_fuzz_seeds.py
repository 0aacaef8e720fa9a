#!/usr/bin/env python3
"""Writes the seed corpora of the ONNX fuzz targets (tests/fuzz/fuzz_onnx.cpp, fuzz_execute.cpp and
fuzz_tensor_proto.cpp).

    .venv/bin/python tools/onnx/make_fuzz_seeds.py tests/fuzz/corpus/onnx tests/fuzz/corpus/tensor_proto

Small models (a few hundred bytes each) that reach the loader's main paths: initializers and
Constant nodes, dynamic dims and shape arithmetic, convolution and pooling, a kept ai.onnx op,
subgraphs (If, Loop), run-time int64s beyond int32 (a Range from 5e9, a ConstantOfShape of 2^32
elements to refuse), attention, ONNX Runtime's contrib ops (a chain of SkipLayerNormalization,
MatMulNBits, FastGelu and DynamicQuantizeMatMul), and external-data references (one through the
name of a folder link). TensorProto files (`wgml run --input x=x.pb`) in each way a tensor's elements
can be stored: raw_data, the typed fields (float_data, int32_data for narrow types, int64_data,
double_data), and external data (plain and through the name of a folder link).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def dense():
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    b = numpy_helper.from_array(np.ones(3, dtype=np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["z"]),
             helper.make_node("Relu", ["z"], ["y"])]
    return model(nodes, [vi("x", F, ["n", 2])], [vi("y", F, ["n", 3])], [w, b])


def shape_arithmetic():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
             helper.make_node("Gather", ["s", "zero"], ["n"]),
             helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Constant", [], ["rest"], value=numpy_helper.from_array(np.array([-1], np.int64))),
             helper.make_node("Concat", ["n1", "rest"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    return model(nodes, [vi("x", F, ["n", 3, 4])], [vi("y", F, ["n", 12])])


def conv_pool():
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), dtype=np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["y"])]
    return model(nodes, [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 2, 1, 1])], [w])


def resize():
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return model([node], [vi("x", F, [1, 1, 2, 2])], [vi("y", F, [1, 1, 4, 4])], [scales], opset=13)


def branches():
    def branch(name, value):
        const = helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array([value], np.float32)))
        return helper.make_graph([const], name, [], [vi(name, F, [1])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("t", 1.0), else_branch=branch("e", 2.0))
    return model([node], [vi("c", TensorProto.BOOL, [])], [vi("y", F, [1])])


def loop():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
        "body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", F, [1])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [1])])
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    cond = numpy_helper.from_array(np.array(True), "cond")
    node = helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)
    return model([node], [vi("x", F, [1])], [vi("y", F, [1])], [trips, cond])


def int64_values():
    """Run-time int64s beyond int32: a Range from n + 5e9 and a ConstantOfShape of n * 2^32 (refused)."""
    big = numpy_helper.from_array(np.array(5_000_000_000, np.int64), "big")
    three = numpy_helper.from_array(np.array(3, np.int64), "three")
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    wide = numpy_helper.from_array(np.array([2**32], np.int64), "wide")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Squeeze", ["s"], ["n"]),
             helper.make_node("Add", ["n", "big"], ["start"]),
             helper.make_node("Add", ["start", "three"], ["limit"]),
             helper.make_node("Range", ["start", "limit", "one"], ["y"]),
             helper.make_node("Mul", ["s", "wide"], ["huge"]),
             helper.make_node("ConstantOfShape", ["huge"], ["z"])]
    return model(nodes, [vi("x", F, ["n"])], [vi("y", I64, [3]), vi("z", F, [None])], [big, three, one, wide])


def attention():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    return model([node], [vi("q", F, [1, 2, 3, 4]), vi("k", F, [1, 2, 3, 4]), vi("v", F, [1, 2, 3, 4])],
                 [vi("y", F, [1, 2, 3, 4])], opset=23)


def contrib_ops():
    """x -> SkipLayerNormalization -> MatMulNBits (4-bit, K 32, N 8) -> FastGelu -> DynamicQuantizeMatMul."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(v, n) for n, v in (
        ("gamma", np.ones(32, np.float32)), ("beta", np.zeros(32, np.float32)),
        ("nbits_b", rng.integers(0, 256, size=(8, 1, 16), dtype=np.uint8)),
        ("nbits_scales", np.full(8, 0.05, np.float32)),
        ("b", rng.integers(-128, 128, size=(8, 4), dtype=np.int8)), ("b_scale", np.float32(0.01)))]
    ms = "com.microsoft"
    nodes = [helper.make_node("SkipLayerNormalization", ["x", "x", "gamma", "beta"], ["normed"], domain=ms),
             helper.make_node("MatMulNBits", ["normed", "nbits_b", "nbits_scales"], ["projected"], domain=ms,
                              K=32, N=8, bits=4, block_size=32),
             helper.make_node("FastGelu", ["projected"], ["activated"], domain=ms),
             helper.make_node("DynamicQuantizeMatMul", ["activated", "b", "b_scale"], ["y"], domain=ms)]
    graph = helper.make_graph(nodes, "contrib_ops", [vi("x", F, [1, 2, 32])], [vi("y", F, [1, 2, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], ir_version=8)


def external_tensor(name, location):
    t = TensorProto(name=name, data_type=F, dims=[2])
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "8")):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def external_model(location):
    w = external_tensor("w", location)
    return model([helper.make_node("Mul", ["x", "w"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])], [w])


def external_data():
    return external_model("weights.bin")


def external_data_through_link():
    """A location through a folder link (up -> ../..) as tests/frontend/onnx/onnx_untrusted_files_test.cpp
    makes one. The fuzz targets load from a folder that does not exist, so no link is there: this seed
    reaches the textual checks and the path resolution, which refuses it as an I/O error."""
    return external_model("up/secret.bin")


def tensor_protos():
    raw = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "raw_float")
    half = numpy_helper.from_array(np.array([1.5, -2, 0.25], np.float16), "raw_half")
    typed_float = helper.make_tensor("typed_float", F, [3], [1.0, 2.0, 3.0])
    typed_int8 = helper.make_tensor("typed_int8", TensorProto.INT8, [2, 2], [1, -2, 3, -4])
    typed_int64 = helper.make_tensor("typed_int64", I64, [2], [7, -9])
    typed_double = helper.make_tensor("typed_double", TensorProto.DOUBLE, [], [0.5])
    typed_bool = helper.make_tensor("typed_bool", TensorProto.BOOL, [3], [True, False, True])
    external = external_tensor("external", "x.bin")
    external_through_link = external_tensor("external_through_link", "up/secret.bin")
    return [raw, half, typed_float, typed_int8, typed_int64, typed_double, typed_bool, external, external_through_link]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path} {len(data)} bytes")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in (dense, shape_arithmetic, conv_pool, resize, branches, loop, int64_values, attention, contrib_ops,
                 external_data, external_data_through_link):
        write(os.path.join(out, f"{make.__name__}.onnx"), make().SerializeToString())
    if len(sys.argv) > 2:
        os.makedirs(sys.argv[2], exist_ok=True)
        for tensor in tensor_protos():
            write(os.path.join(sys.argv[2], f"{tensor.name}.pb"), tensor.SerializeToString())


if __name__ == "__main__":
    main()
