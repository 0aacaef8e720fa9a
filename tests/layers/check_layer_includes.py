#!/usr/bin/env python3
"""Fails when a layer below the frontend includes a frontend or protobuf header.

Data flows file -> frontend -> ir -> runtime -> backend (docs/ir.md, "Models"): the runtime and the
backends take an ir::Model and must build without the frontend library or protobuf, so nothing
they compile, nor the libraries they link, may include from src/frontend or the ONNX protobuf code.

  check_layer_includes.py SRC_DIR      prints every breach; exits 1 if there is one
  check_layer_includes.py --self-test  checks that planted breaches are caught
"""
import argparse
import pathlib
import re
import sys
import tempfile

# src/ folders that the runtime and backend libraries compile or link (io is part of wgml_core).
LOWER_LAYERS = ("core", "io", "ir", "kernel", "runtime", "backend", "gpu")
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".inc"}
# Protobuf counts as frontend: only the ONNX frontend parses it.
FORBIDDEN_INCLUDE = re.compile(
    r'\s*#\s*include\s*[<"]((?:\.\./)*(?:src/)?frontend/[^>"]*|onnx-ml\.pb\.h|google/protobuf/[^>"]*)[>"]')


def breaches(src_dir):
    for layer in LOWER_LAYERS:
        for path in sorted((src_dir / layer).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            for number, line in enumerate(lines, 1):
                match = FORBIDDEN_INCLUDE.match(line)
                if match:
                    yield f"{path.relative_to(src_dir.parent)}:{number}: includes {match.group(1)}"


def check(src_dir):
    # A renamed layer folder would otherwise pass unchecked.
    missing = [layer for layer in LOWER_LAYERS if not (src_dir / layer).is_dir()]
    if missing:
        print(f"{src_dir}: expected the layer folders {', '.join(missing)}, found none; "
              "update LOWER_LAYERS in this script")
        return 2
    found = list(breaches(src_dir))
    for breach in found:
        print(breach)
    if found:
        print(f"{len(found)} include(s) of the frontend below it: move what these files need "
              "into src/ir (see docs/ir.md, \"Models\")")
    return 1 if found else 0


def self_test():
    planted = {
        "runtime/planted.h": '#pragma once\n#include "frontend/load_model.h"\n',
        "backend/cpu/planted.cpp": '#include <vector>\n  #  include <onnx-ml.pb.h>\n',
        "ir/clean.cpp": '#include "ir/model.h"\n// #include "frontend/summary.h" in a comment\n',
    }
    expected = [
        "src/runtime/planted.h:2: includes frontend/load_model.h",
        "src/backend/cpu/planted.cpp:2: includes onnx-ml.pb.h",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        src_dir = pathlib.Path(tmp) / "src"
        for layer in LOWER_LAYERS:
            (src_dir / layer).mkdir(parents=True)
        for name, text in planted.items():
            (src_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (src_dir / name).write_text(text, encoding="utf-8")
        found = list(breaches(src_dir))
        status = check(src_dir)
    if found != expected or status != 1:
        print(f"self-test: expected {expected} and status 1, found {found} and status {status}")
        return 1
    print("self-test: every planted breach was caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src_dir", nargs="?", type=pathlib.Path)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if args.src_dir is None:
        parser.error("expected SRC_DIR or --self-test")
    return check(args.src_dir)


if __name__ == "__main__":
    sys.exit(main())
