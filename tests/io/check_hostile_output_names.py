"""`wgml run --output-dir` on an ONNX model whose outputs have hostile names: every file lands in
the folder named, under the documented plain name, holding the right values, and nothing is
written anywhere else.

    check_hostile_output_names.py --wgml BUILD/tools/cli/wgml --work SCRATCH_DIR

Output k of the model is x + k, so each file's content says which output it came from.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

# (output name, the file name io/output_files.h gives it)
HOSTILE = [
    ("gpu_0/softmax_1", "gpu_0_softmax_1.npy"),  # converted Caffe2 models (the onnx wheel's light_resnet50)
    ("../../x", "___.__x.npy"),
    ("/abs", "_abs.npy"),
    ("..", "__.npy"),
    (".hidden", "_hidden.npy"),
    ("L" * 300, "L" * 100 + ".npy"),
    ("ctl\x01\x1fname", "ctlname.npy"),
    ("a:b*c?d|e<f>g\"h\\i", "a_b_c_d_e_f_g_h_i.npy"),
    ("a/b", "a_b-2.npy"),  # the same file as the plain name "a_b": numbered, though it comes first
    ("a_b", "a_b.npy"),  # a plain name keeps its own file
    ("CON", "_CON.npy"),
]


def make_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes, outputs, initializers = [], [], []
    for k, (name, _) in enumerate(HOSTILE):
        initializers.append(helper.make_tensor(f"c{k}", TensorProto.FLOAT, [], [float(k)]))
        nodes.append(helper.make_node("Add", ["x", f"c{k}"], [name]))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3]))
    graph = helper.make_graph(nodes, "hostile_output_names", [x], outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names)


def non_utf8_name_problems(wgml, model, work):
    """`wgml inspect --json` on a model whose output name is not UTF-8 (the byte 0xff): the JSON
    shows it as U+FFFD instead of aborting."""
    patched = os.path.join(work, "not_utf8.onnx")
    with open(model, "rb") as f:
        data = f.read()
    with open(patched, "wb") as f:
        f.write(data.replace(b"CON", b"\xffON"))
    proc = subprocess.run([wgml, "inspect", patched, "--json"], capture_output=True)
    if proc.returncode != 0:
        return [f"wgml inspect --json on a non-UTF-8 output name failed: {proc.stderr.decode(errors='replace')}"]
    names = [o["name"] for o in json.loads(proc.stdout)["outputs"]]
    return [] if "\ufffdON" in names else [f"non-UTF-8 output name not shown as U+FFFD: {names}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model, x_path = os.path.join(args.work, "model.onnx"), os.path.join(args.work, "x.npy")
    make_model(model)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(x_path, x)
    out_dir = os.path.join(args.work, "out", "a", "b")  # does not exist yet: wgml makes it
    proc = subprocess.run([args.wgml, "run", model, "--device", "cpu", "--input", f"x={x_path}",
                           "--output-dir", out_dir, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"wgml run failed: {proc.stderr}")
    reported = json.loads(proc.stdout)["steps"][0]
    problems = []
    for k, ((name, expected_file), output) in enumerate(zip(HOSTILE, reported, strict=True)):
        if output["name"] != name or output["file"] != os.path.join(out_dir, expected_file):
            problems.append(f"output {k} {name!r}: reported {output}, expected file {expected_file!r}")
            continue
        got = np.load(output["file"])
        if not np.array_equal(got, x + k):
            problems.append(f"output {k} {name!r}: {expected_file} holds {got.tolist()}, expected x + {k}")
    expected_files = sorted(["model.onnx", "x.npy"] + [os.path.join("out", "a", "b", f) for _, f in HOSTILE])
    if files_under(args.work) != expected_files:
        problems.append(f"files written: {files_under(args.work)}, expected {expected_files}")
    problems += non_utf8_name_problems(args.wgml, model, args.work)
    if problems:
        sys.exit("\n".join(problems))
    print(f"{len(HOSTILE)} hostile output names: every file inside {out_dir}")


if __name__ == "__main__":
    main()
