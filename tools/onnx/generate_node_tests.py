#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx package as data files, with the model
test suites the wheel ships as data (light, pytorch-converted, pytorch-operator, simple).

The onnx wheel ships the node test cases as code (onnx/backend/test/case/node/*.py: each builds a
model and computes its expected outputs with numpy) but no longer ships their data. This writes
each case the way the onnx repository's onnx/backend/test/data/node/ holds it:

    OUT/<test>/model.onnx
    OUT/<test>/test_data_set_0/input_<i>.pb, output_<i>.pb   (TensorProto, or Sequence/Optional)

plus OUT/<suite>/<test>/ likewise for the model suites, each test's data sets copied as they are
(a `light` model gets the input its runner would make, arange(n) / n, and its stored output), and
OUT/manifest.json: per test, its suite, tolerances, op types, opsets and I/O types, which the
conformance runner (run_conformance.py) uses to decide scope.

    .venv/bin/python tools/onnx/generate_node_tests.py OUT
"""
import argparse
import json
import os
import shutil
import sys
import warnings

import numpy as np


def io_kind(value_info):
    t = value_info.type
    if t.HasField("tensor_type"):
        import onnx
        return onnx.TensorProto.DataType.Name(t.tensor_type.elem_type)
    return t.WhichOneof("value")


def serialize(value, value_info):
    from onnx import TensorProto, numpy_helper
    t = value_info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


MODEL_SUITES = ("light", "pytorch-converted", "pytorch-operator", "simple")
# What onnx's backend test runner uses for the model suites unless a test's data.json says otherwise.
MODEL_RTOL, MODEL_ATOL = 1e-3, 1e-7


def describe(model, input_names, rtol, atol, suite):
    graph = model.graph
    by_name = {v.name: v for v in graph.input}
    return {
        "suite": suite,
        "rtol": rtol,
        "atol": atol,
        "ops": sorted({n.op_type for n in graph.node}),
        "domains": sorted({o.domain or "ai.onnx" for o in model.opset_import}),
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "inputs": [io_kind(by_name[n]) for n in input_names],
        "input_names": input_names,
        "outputs": [io_kind(v) for v in graph.output],
        "output_names": [v.name for v in graph.output],
    }


def write_model_test(source, directory, suite):
    """A pytorch-converted, pytorch-operator or simple test: model and data sets as they are."""
    import onnx
    shutil.copytree(source, directory)
    model = onnx.load(os.path.join(directory, "model.onnx"))
    inputs = len([f for f in os.listdir(os.path.join(directory, "test_data_set_0")) if f.startswith("input_")])
    rtol, atol = MODEL_RTOL, MODEL_ATOL
    if os.path.exists(os.path.join(source, "data.json")):
        with open(os.path.join(source, "data.json")) as f:
            data = json.load(f)
        rtol, atol = data.get("rtol", rtol), data.get("atol", atol)
    # onnx's runner binds input_<i>.pb to the model's i-th graph input.
    return describe(model, [v.name for v in model.graph.input[:inputs]], rtol, atol, suite)


def write_light_test(model_path, directory):
    """A light model: every graph input that is no initializer gets arange(n) / n in its shape (1
    for a symbolic dim), as onnx's runner makes it; the stored output is the expected one."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data)
    shutil.copy(model_path, os.path.join(directory, "model.onnx"))
    initializers = {t.name for t in model.graph.initializer}
    names = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in value.type.tensor_type.shape.dim)
        count = int(np.prod(shape))
        array = (np.arange(count).reshape(shape) / count).astype(np.float32)
        with open(os.path.join(data, f"input_{len(names)}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())
        names.append(value.name)
    prefix = os.path.splitext(model_path)[0]
    for i in range(len(model.graph.output)):
        shutil.copy(f"{prefix}_output_{i}.pb", os.path.join(data, f"output_{i}.pb"))
    return describe(model, names, MODEL_RTOL, MODEL_ATOL, "light")


def write_model_suites(out, manifest):
    import onnx
    data_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for suite in MODEL_SUITES:
        suite_dir = os.path.join(data_dir, suite)
        for entry in sorted(os.listdir(suite_dir)):
            name = f"{suite}/{os.path.splitext(entry)[0]}"
            source = os.path.join(suite_dir, entry)
            if suite == "light" and entry.endswith(".onnx"):
                manifest["tests"][name] = write_light_test(source, os.path.join(out, name))
            elif os.path.exists(os.path.join(source, "model.onnx")):
                manifest["tests"][name] = write_model_test(source, os.path.join(out, name), suite)


# Bumped when what OUT holds changes (2: the model suites too), so --if-stale rewrites older ones.
LAYOUT = 2


def is_current(out):
    import onnx
    try:
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        return manifest["onnx_version"] == onnx.__version__ and manifest.get("layout") == LAYOUT
    except (OSError, ValueError, KeyError):
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output directory (replaced)")
    parser.add_argument("--if-stale", action="store_true",
                        help="do nothing when OUT already holds the tests of the installed onnx")
    args = parser.parse_args()
    if args.if_stale and is_current(args.out):
        return

    # The cases draw random inputs when they are collected: seed for identical data every run.
    np.random.seed(0)
    warnings.filterwarnings("ignore")
    import onnx
    from onnx.backend.test.case import node

    cases = node.collect_testcases()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    manifest = {"onnx_version": onnx.__version__, "layout": LAYOUT, "tests": {}}
    for case in cases:
        directory = os.path.join(args.out, case.name)
        data = os.path.join(directory, "test_data_set_0")
        os.makedirs(data)
        with open(os.path.join(directory, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        inputs, outputs = case.data_sets[0]
        for i, value in enumerate(inputs):
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(serialize(value, graph.input[i]))
        for i, value in enumerate(outputs):
            with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                f.write(serialize(value, graph.output[i]))
        manifest["tests"][case.name] = describe(case.model, [v.name for v in graph.input[: len(inputs)]],
                                                case.rtol, case.atol, "node")
    write_model_suites(args.out, manifest)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {len(cases)} node tests and {len(manifest['tests']) - len(cases)} model tests of onnx "
          f"{onnx.__version__} to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
