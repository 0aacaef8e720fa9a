#!/usr/bin/env python3
"""Runs the ONNX backend node tests through `wgml run` and reports per-op pass/fail/unsupported.

    .venv/bin/python tools/onnx/run_conformance.py --wgml build/tools/cli/wgml --tests DIR \\
        [--summary docs/onnx-conformance.md] [--min-pass-rate 0.85] [--jobs 2] [--filter REGEX]

DIR is what generate_node_tests.py wrote. Each test's inputs are passed as `--input NAME=input_i.pb`
(ONNX TensorProto files); outputs come back as .npy and are compared with output_i.pb using the
test's tolerances (|got - expected| <= atol + rtol * |expected|, NaN equal to NaN; integers and
bools exactly). Out of scope, and not counted: training-domain tests, tests with string or
sequence-typed inputs or outputs. A test is "unsupported" when wgml refuses the model at load time
with an Unsupported error (the message names the op, opset or dtype), and "fail" otherwise.
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

OUT_OF_SCOPE_DOMAINS = {"ai.onnx.preview.training"}
OUT_OF_SCOPE_KINDS = {"STRING", "sequence_type"}


def scope_reason(test):
    if OUT_OF_SCOPE_DOMAINS & set(test["domains"]):
        return "training domain"
    kinds = set(test["inputs"]) | set(test["outputs"])
    if "STRING" in kinds:
        return "string tensors"
    if "sequence_type" in kinds:
        return "sequence types"
    return None


def tested_op(name, tests):
    """The op a test is about: its single op, or for a function-body expansion its twin's op."""
    test = tests[name]
    if len(test["ops"]) == 1:
        return test["ops"][0]
    twin = re.sub(r"_expanded(_ver\d+)?$", r"\1", name)
    if twin != name and twin in tests and len(tests[twin]["ops"]) == 1:
        return tests[twin]["ops"][0] + " (expanded)"
    return "(multi-node)"


def to_comparable(array):
    """float32/float64 for floats (bfloat16 arrives as raw uint16 bits), else the array."""
    if array.dtype.kind == "V" or str(array.dtype) == "bfloat16":
        array = array.view(np.uint16)
    return array


def bf16_bits_to_float(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def compare(got, expected, rtol, atol, expected_type):
    if expected_type == "BFLOAT16":
        expected = bf16_bits_to_float(np.asarray(expected).view(np.uint16))
        got = bf16_bits_to_float(got.view(np.uint16))
    if got.shape != expected.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}"
    got, expected = np.atleast_1d(got), np.atleast_1d(expected)
    if expected.dtype.kind in "biu" or expected.dtype == np.bool_:
        if got.dtype != expected.dtype:
            return f"dtype {got.dtype}, expected {expected.dtype}"
        bad = np.nonzero(got != expected)
        if bad[0].size:
            i = tuple(b[0] for b in bad)
            return f"{bad[0].size} of {got.size} elements differ (first at {list(i)}: {got[i]} vs {expected[i]})"
        return None
    if got.dtype != expected.dtype and not (expected_type == "BFLOAT16"):
        return f"dtype {got.dtype}, expected {expected.dtype}"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    same_inf = np.isinf(e) & (g == e)
    ok = both_nan | same_inf | (np.abs(g - e) <= atol + rtol * np.abs(e))
    if not ok.all():
        bad = np.nonzero(~ok)
        i = tuple(b[0] for b in bad)
        return f"{bad[0].size} of {g.size} elements off (first at {list(i)}: {g[i]} vs {e[i]})"
    return None


def error_message(stderr, model_path):
    """The wgml error line and the unsupported uses listed under it, without the model path."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "error" in line:
            listed = [l.strip() for l in lines[i + 1:] if l.startswith("  ")]
            message = " | ".join([line.strip()] + listed)
            return message.replace(model_path + ": ", "")
    return lines[-1].strip() if lines else "no output"


def data_sets(name, args):
    directory = os.path.join(args.tests, name)
    return sorted(glob.glob(os.path.join(directory, "test_data_set_*")))


def load_tensor(path, kind="tensor"):
    """A TensorProto file as an array; an OptionalProto file (kind optional_type) as its value."""
    from onnx import OptionalProto, TensorProto, numpy_helper
    proto = OptionalProto() if kind == "optional_type" else TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return numpy_helper.to_optional(proto) if kind == "optional_type" else numpy_helper.to_array(proto)


def compare_outputs(got_by_index, data, test):
    """The first output that differs from output_<i>.pb, as a message; None when all match."""
    for i, output_name in enumerate(test["output_names"]):
        got = got_by_index(i)
        if got is None:
            return f"output '{output_name}' was not written"
        try:
            expected = to_comparable(load_tensor(os.path.join(data, f"output_{i}.pb")))
            problem = compare(got, expected, test["rtol"], test["atol"], test["outputs"][i])
        except ValueError as e:  # element types numpy holds only as raw bytes (float8, int4, ...)
            problem = f"cannot compare dtype {got.dtype} with the expected {test['outputs'][i]}: {e}"
        if problem:
            return f"output '{output_name}': {problem}"
    return None


def written_outputs(stdout):
    """Output name -> array, from the files `wgml run --json` says it wrote (one plain file name per
    output, docs/reliability.md)."""
    return {o["name"]: np.load(o["file"]) for o in json.loads(stdout)["steps"][0] if "file" in o}


def run_test(name, test, args):
    model = os.path.join(args.tests, name, "model.onnx")
    for data in data_sets(name, args):
        with tempfile.TemporaryDirectory(prefix="wgml_onnx_") as out:
            command = [args.wgml, "run", model, "--output-dir", out, "--device", args.device, "--json"]
            for i, input_name in enumerate(test["input_names"]):
                command += ["--input", f"{input_name}={os.path.join(data, f'input_{i}.pb')}"]
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                return "fail", f"timed out after {args.timeout}s"
            if proc.returncode != 0:
                message = error_message(proc.stderr, model)
                if "[unsupported]" in message or "[Unsupported]" in message:
                    return "unsupported", message
                return "fail", message
            written = written_outputs(proc.stdout)
            problem = compare_outputs(lambda i: written.get(test["output_names"][i]), data, test)
            if problem:
                return "fail", problem
    return "pass", ""


def run_test_onnxruntime(name, test, args):
    """The same test through onnxruntime's CPU provider: "unsupported" when it refuses the model
    (NOT_IMPLEMENTED, an unknown op or type), "fail" for other errors and wrong outputs."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(os.path.join(args.tests, name, "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types per status code
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        return ("unsupported" if "NOT_IMPLEMENTED" in message or "NotImplemented" in type(e).__name__ else "fail"), message
    for data in data_sets(name, args):
        try:
            feeds = {input_name: load_tensor(os.path.join(data, f"input_{i}.pb"), test["inputs"][i])
                     for i, input_name in enumerate(test["input_names"])}
            outputs = session.run(test["output_names"], feeds)
        except Exception as e:
            return "fail", str(e).splitlines()[0] if str(e) else type(e).__name__
        problem = compare_outputs(lambda i: np.asarray(outputs[i]), data, test)
        if problem:
            return "fail", problem
    return "pass", ""


CAUSES = [
    ("element type|cast to|bit cast to|quantization to", "an element type wgml has no dtype for (uint16, uint64, 8-, 4- and 2-bit types)"),
    ("only tensor inputs", "an optional-typed graph input"),
    ("no lowering for this op", "an op without a lowering or kernel"),
    ("elements off|elements differ", "outputs outside the test's tolerance"),
    ("drops at random", "random output (training-mode dropout)"),
]


def cause_of(status, message):
    for pattern, cause in CAUSES:
        if re.search(pattern, message):
            return cause
    return "other: see the list below" if status != "out of scope" else message


SUITES = ("node", "light", "pytorch-converted", "pytorch-operator", "simple")


def suite_of(test):
    return test.get("suite", "node")


def suite_counts(results, tests):
    """Per suite: a Counter of statuses."""
    counts = collections.defaultdict(collections.Counter)
    for name, (status, _) in results.items():
        counts[suite_of(tests[name])][status] += 1
    return counts


def in_scope(counter):
    return counter["pass"] + counter["fail"] + counter["unsupported"]


def suite_table(results, ort_results, tests, device):
    """Markdown rows: per suite, the in-scope count and each runtime's passes."""
    wgml, ort = suite_counts(results, tests), suite_counts(ort_results, tests)
    header = f"| suite | in scope | wgml {device} pass | ONNX Runtime pass | out of scope |"
    lines = [header, "|---|---|---|---|---|"]
    for suite in SUITES:
        if suite not in wgml:
            continue
        c = wgml[suite]
        ort_pass = str(ort[suite]["pass"]) if ort_results else "not run"
        lines.append(f"| {suite} | {in_scope(c)} | {c['pass']} | {ort_pass} | {c['out of scope']} |")
    return lines


def write_summary(path, results, ort_results, tests, args, seconds):
    node_results = {n: r for n, r in results.items() if suite_of(tests[n]) == "node"}
    per_op = collections.defaultdict(collections.Counter)
    for name, (status, _) in node_results.items():
        per_op[tested_op(name, tests)][status] += 1
    totals = collections.Counter(status for status, _ in node_results.values())
    in_scope_count = in_scope(totals)
    rate = totals["pass"] / in_scope_count if in_scope_count else 0.0
    lines = [
        "# ONNX backend tests on wgml",
        "",
        "Generated by `tools/onnx/run_conformance.py` (do not edit by hand). The tests are the node",
        f"test cases of the onnx {args.onnx_version} wheel and the model suites it ships as data (light,",
        "pytorch-converted, pytorch-operator, simple), written out by `tools/onnx/generate_node_tests.py`,",
        f"run through `wgml run` on the `{args.device}` backend and, in the same run, through onnxruntime's",
        "CPU provider against the same stored outputs and tolerances.",
        "Out of scope: training-domain tests and tests with string or sequence-typed inputs or outputs.",
        "",
        *suite_table(results, ort_results, tests, args.device),
        "",
        f"**Node tests: {totals['pass']} of {in_scope_count} in-scope tests pass ({100 * rate:.1f}%)**; "
        f"{totals['fail']} fail, {totals['unsupported']} are refused at load as unsupported, "
        f"{totals['out of scope']} are out of scope. Wall time {seconds:.0f} s.",
        "",
        "| op | pass | fail | unsupported | out of scope |",
        "|---|---|---|---|---|",
    ]
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(f"| {op} | {c['pass']} | {c['fail']} | {c['unsupported']} | {c['out of scope']} |")
    causes = collections.Counter(cause_of(s, m) for s, m in results.values() if s in ("fail", "unsupported"))
    lines += ["", "## Why the others do not pass", "", "| cause | tests |", "|---|---|"]
    for cause, count in causes.most_common():
        lines.append(f"| {cause} | {count} |")
    lines += ["", "## Tests that do not pass, one by one", ""]
    for status in ("fail", "unsupported", "out of scope"):
        names = sorted(n for n, (s, _) in results.items() if s == status)
        if not names:
            continue
        lines.append(f"### {status} ({len(names)})")
        lines.append("")
        for n in names:
            lines.append(f"- `{n}`: {results[n][1]}")
        lines.append("")
    if ort_results:
        ort_misses = sorted(n for n, (s, _) in ort_results.items() if s in ("fail", "unsupported"))
        lines += [f"## Tests ONNX Runtime does not pass ({len(ort_misses)})", ""]
        lines += [f"- `{n}`: {ort_results[n][0]}: {ort_results[n][1]}" for n in ort_misses]
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def run_all(runnable, tests, args):
    """(wgml results, onnxruntime results or {}) for the runnable tests."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        wgml = {pool.submit(run_test, n, tests[n], args): n for n in runnable}
        ort = {pool.submit(run_test_onnxruntime, n, tests[n], args): n for n in runnable} if args.onnxruntime else {}
        results = {wgml[f]: f.result() for f in concurrent.futures.as_completed(wgml)}
        ort_results = {ort[f]: f.result() for f in concurrent.futures.as_completed(ort)}
    return results, ort_results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True, help="the wgml executable")
    parser.add_argument("--tests", required=True, help="directory written by generate_node_tests.py")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds per test (the CPU reference takes minutes on light_vgg19 on a busy machine)")
    parser.add_argument("--filter", default="", help="regex on test names (model suites' are SUITE/NAME)")
    parser.add_argument("--summary", help="write the markdown summary here")
    parser.add_argument("--min-pass-rate", type=float, default=0.0,
                        help="exit 1 when fewer in-scope node tests pass (a fraction)")
    parser.add_argument("--onnxruntime", action="store_true", help="also run each test through onnxruntime")
    parser.add_argument("--at-least-onnxruntime", action="store_true",
                        help="exit 1 when wgml passes fewer tests of a suite than onnxruntime")
    args = parser.parse_args()

    with open(os.path.join(args.tests, "manifest.json")) as f:
        manifest = json.load(f)
    args.onnx_version = manifest["onnx_version"]
    tests = manifest["tests"]
    names = sorted(n for n in tests if re.search(args.filter, n))
    start = time.time()
    results = {}
    runnable = []
    for name in names:
        reason = scope_reason(tests[name])
        if reason:
            results[name] = ("out of scope", reason)
        else:
            runnable.append(name)
    ran, ort_results = run_all(runnable, tests, args)
    results.update(ran)
    seconds = time.time() - start

    per_op = collections.defaultdict(collections.Counter)
    for name, (status, _) in results.items():
        if suite_of(tests[name]) == "node":
            per_op[tested_op(name, tests)][status] += 1
    for op in sorted(per_op):
        c = per_op[op]
        print(f"{op:40s} pass {c['pass']:3d}  fail {c['fail']:3d}  unsupported {c['unsupported']:3d}"
              f"  out of scope {c['out of scope']:3d}")
    for name in sorted(n for n in ran if suite_of(tests[n]) != "node"):
        print(f"{name:40s} {results[name][0]:11s} {results[name][1][:160]}")
    print()
    print("\n".join(suite_table(results, ort_results, tests, args.device)))
    node = suite_counts(results, tests)["node"]
    rate = node["pass"] / in_scope(node) if in_scope(node) else 1.0
    print(f"\nnode tests: {node['pass']} / {in_scope(node)} in-scope tests pass ({100 * rate:.1f}%), {node['fail']} fail, "
          f"{node['unsupported']} unsupported, {node['out of scope']} out of scope; {seconds:.0f} s")
    if args.summary:
        write_summary(args.summary, results, ort_results, tests, args, seconds)
    failed = False
    if rate < args.min_pass_rate:
        print(f"pass rate {rate:.3f} is below the required {args.min_pass_rate}", file=sys.stderr)
        failed = True
    if args.at_least_onnxruntime:
        wgml, ort = suite_counts(results, tests), suite_counts(ort_results, tests)
        for suite in sorted(set(wgml) | set(ort)):
            if wgml[suite]["pass"] < ort[suite]["pass"]:
                print(f"{suite}: wgml passes {wgml[suite]['pass']}, fewer than ONNX Runtime's {ort[suite]['pass']}",
                      file=sys.stderr)
                failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
