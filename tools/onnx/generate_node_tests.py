#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx package as data files.

The onnx wheel ships the node test cases as code (onnx/backend/test/case/node/*.py: each builds a
model and computes its expected outputs with numpy) but no longer ships their data. This writes
each case the way the onnx repository's onnx/backend/test/data/node/ holds it:

    OUT/<test>/model.onnx
    OUT/<test>/test_data_set_0/input_<i>.pb, output_<i>.pb   (TensorProto, or Sequence/Optional)

plus OUT/manifest.json: per test, its tolerances, op types, opsets and I/O types, which the
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


def is_current(out):
    import onnx
    try:
        with open(os.path.join(out, "manifest.json")) as f:
            return json.load(f)["onnx_version"] == onnx.__version__
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
    manifest = {"onnx_version": onnx.__version__, "tests": {}}
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
        manifest["tests"][case.name] = {
            "rtol": case.rtol,
            "atol": case.atol,
            "ops": sorted({n.op_type for n in graph.node}),
            "domains": sorted({o.domain or "ai.onnx" for o in case.model.opset_import}),
            "opsets": {o.domain or "ai.onnx": o.version for o in case.model.opset_import},
            "inputs": [io_kind(v) for v in graph.input[: len(inputs)]],
            "input_names": [v.name for v in graph.input[: len(inputs)]],
            "outputs": [io_kind(v) for v in graph.output],
            "output_names": [v.name for v in graph.output],
        }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {len(cases)} node tests of onnx {onnx.__version__} to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
