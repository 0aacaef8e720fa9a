#!/usr/bin/env python3
"""Puts `wgml bench --json` results beside torch_bench.py's for the same shapes, measured in the same run: tokens/s
at the median, each rate, and wgml's over PyTorch's CUDA graph and eager (above 1: wgml is faster).

Usage: compare.py WGML.json:TORCH.json [WGML.json:TORCH.json ...]   (a pair per model; TORCH may be empty)
"""
import json
import os
import sys


def median(test):
    return test["tokens_per_s"]["median"]


def rate_text(test):
    rate = test.get("median_rate")
    if not rate:
        return "-"
    text = f"{rate['value']:.4g} {rate['unit']}"
    if test.get("of_roofline"):
        text += f", {100 * test['of_roofline']:.1f}% of {test['roofline']}"
    return text


def rows(wgml_path, torch_path):
    try:
        with open(wgml_path) as f:
            ours = json.load(f)
    except (OSError, ValueError) as e:
        yield f"| {os.path.basename(wgml_path)} | no result ({e}) | | | | | | |"
        return
    theirs = {}
    if torch_path:
        with open(torch_path) as f:
            theirs = json.load(f)["modes"]
    model = os.path.basename(ours["model"])
    for test in ours["tests"]:
        # The peer's run of the same test in each mode (none where it ran other sizes).
        peer = {mode: t for mode, result in theirs.items() for t in result["tests"] if t["test"] == test["test"]}
        graph, eager = peer.get("cuda_graph"), peer.get("eager")
        yield (f"| {model} | {test['test']} | {median(test):.1f} | {rate_text(test)} | "
               f"{f'{median(graph):.1f} ({rate_text(graph)})' if graph else '-'} | "
               f"{f'{median(eager):.1f}' if eager else '-'} | "
               f"{f'{median(test) / median(graph):.2f}' if graph else '-'} | "
               f"{f'{median(test) / median(eager):.2f}' if eager else '-'} |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| model | test | wgml t/s (median) | wgml rate | torch CUDA graph t/s (rate) | torch eager t/s | "
          "wgml / graph | wgml / eager |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for pair in sys.argv[1:]:
        wgml_path, _, torch_path = pair.partition(":")
        for row in rows(wgml_path, torch_path):
            print(row)


if __name__ == "__main__":
    main()
