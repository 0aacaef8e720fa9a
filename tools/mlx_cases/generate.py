"""Writes the MLX-differential cases: for every node of schema/mlx_delegate.fbs, tiny programs and
MLX's results, one JSON file per node (<out>/<NodeName>.json). Run at test time (CTest fixture);
tests/backend/cpu/mlx_differential_test.cpp runs each program on the CPU backend and compares.

    python tools/mlx_cases/generate.py OUT_DIR
"""
import json
import os
import sys
import time

import mlx.core as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases_elementwise  # noqa: E402
import cases_matmul  # noqa: E402
import cases_nn  # noqa: E402
import cases_quant  # noqa: E402
import cases_random  # noqa: E402
import cases_reduce  # noqa: E402
import cases_runtime  # noqa: E402
import cases_shape  # noqa: E402
import cases_shape_classes  # noqa: E402

FAMILIES = (cases_elementwise, cases_shape, cases_reduce, cases_nn, cases_matmul, cases_quant, cases_runtime, cases_random,
            cases_shape_classes)


def collect():
    """Every family's cases, merged by node (several families may test the same node)."""
    by_node = {}
    for family in FAMILIES:
        for node, node_cases in family.cases().items():
            merged = by_node.setdefault(node, [])
            names = {c.name for c in merged}
            clash = [c.name for c in node_cases if c.name in names]
            if clash:
                raise ValueError(f"{node}: {family.__name__} repeats case names {clash}")
            merged += node_cases
    return by_node


def main(out_dir):
    started = time.time()
    os.makedirs(out_dir, exist_ok=True)
    total = 0
    for node, node_cases in collect().items():
        with open(os.path.join(out_dir, node + ".json"), "w") as f:
            json.dump({"node": node, "cases": [c.to_json() for c in node_cases]}, f)
        total += len(node_cases)
    print(f"mlx_cases: {total} cases written to {out_dir} in {time.time() - started:.1f} s (MLX {mx.__version__})")


if __name__ == "__main__":
    main(sys.argv[1])
