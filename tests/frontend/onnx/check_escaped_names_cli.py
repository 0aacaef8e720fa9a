"""`wgml inspect` (text and --json), `wgml run` (its output listing and --profile) and wgml's error
messages on ONNX models whose names hold terminal escape sequences and bytes that are not UTF-8:
everything printed is valid UTF-8 without a control character but the newline, and the names show
escaped (\\x1b), or in JSON with the bytes that are not UTF-8 as U+FFFD.

    check_escaped_names_cli.py --wgml BUILD/tools/cli/wgml --work SCRATCH_DIR
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

# Sets the terminal's title and clears its screen; MARK becomes two bytes that are not UTF-8 once
# the model is serialized (protobuf's Python API takes only str; the length stays).
MARK = "@@"
HOSTILE = "n\x1b]0;owned\x07\x1b[2J\u009b1m" + MARK
ESCAPED = r"n\x1b]0;owned\x07\x1b[2J\xc2\x9b1m\xff\xfe"
IN_JSON = "n\x1b]0;owned\x07\x1b[2J\u009b1m\ufffd\ufffd"


def write_model(path, op_type):
    x = helper.make_tensor_value_info(HOSTILE, TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info(HOSTILE + "out", TensorProto.FLOAT, [2])
    node = helper.make_node(op_type, [HOSTILE], [HOSTILE + "out"], name=HOSTILE)
    model = helper.make_model(helper.make_graph([node], HOSTILE, [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)], producer_name=HOSTILE)
    with open(path, "wb") as f:
        f.write(model.SerializeToString().replace(MARK.encode(), b"\xff\xfe"))


def problems_in(what, data):
    """Why `data` (bytes wgml printed) could not go to a terminal as it is, or []."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"{what}: not UTF-8: {e}"]
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f})
    return [f"{what}: control characters {bad} in {text!r}"] if bad else []


def wgml_output(wgml, args, expect_rc):
    proc = subprocess.run([wgml, *args], capture_output=True)
    what = "wgml " + " ".join(os.path.basename(a) for a in args)
    problems = problems_in(what + " stdout", proc.stdout) + problems_in(what + " stderr", proc.stderr)
    if proc.returncode != expect_rc:
        problems.append(f"{what}: exit status {proc.returncode}, expected {expect_rc}: {proc.stderr!r}")
    return proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), problems


def json_name_problems(text):
    """What is wrong with the names in `wgml inspect --json`'s output `text`, or []."""
    if not text.isascii():
        return [f"wgml inspect --json: not ASCII: {text!r}"]
    summary = json.loads(text)
    names = [summary["inputs"][0]["name"], summary["outputs"][0]["name"], summary["source"]["graph"]]
    return [] if names == [IN_JSON, IN_JSON + "out", IN_JSON] else [f"wgml inspect --json: names {names!r}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    good, bad, x = (os.path.join(args.work, f) for f in ("relu.onnx", "unknown_op.onnx", "x.npy"))
    write_model(good, "Relu")
    write_model(bad, HOSTILE)
    np.save(x, np.array([-1, 2], dtype=np.float32))
    problems = []

    text, _, found = wgml_output(args.wgml, ["inspect", good], 0)
    problems += found
    for expected in (f"  {ESCAPED}: float32 [2]", f"  {ESCAPED}out: float32 [2]", f"producer: {ESCAPED}"):
        if expected not in text:
            problems.append(f"wgml inspect: {expected!r} not in {text!r}")

    text, _, found = wgml_output(args.wgml, ["inspect", good, "--json"], 0)
    problems += found or json_name_problems(text)

    text, profile, found = wgml_output(args.wgml, ["run", good, "--device", "cpu", "--input", x, "--profile"], 0)
    problems += found
    if f"{ESCAPED}out: float32 [2]" not in text:
        problems.append(f"wgml run: the output not listed escaped: {text!r}")
    if f"from ONNX node '{ESCAPED}' (Relu)" not in profile:
        problems.append(f"wgml run --profile: the node not named escaped: {profile!r}")

    for command in (["inspect", bad], ["run", bad, "--device", "cpu", "--input", x]):
        _, error, found = wgml_output(args.wgml, command, 1)
        problems += found
        if f"node '{ESCAPED}' ({ESCAPED}, opset 17): no lowering" not in error:
            problems.append(f"wgml {command[0]}: the node and its op type not named escaped: {error!r}")

    if problems:
        sys.exit("\n".join(problems))
    print("names with escape sequences and bytes that are not UTF-8: printed escaped by inspect, run and errors")


if __name__ == "__main__":
    main()
