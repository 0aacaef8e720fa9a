#!/usr/bin/env python3
"""Regenerate the committed LLM fixtures tests/fixtures/llm/<name>/ (tiny random-weight models only).

    $VENV/bin/python tools/llm/make_fixtures.py [--out tests/fixtures/llm] [--only NAME ...]

($VENV: the export venv of docs/llm-export.md.)

Each fixture is tools/export_llm.py's output for one (config, dtype, quant) plus tools/llm/make_references.py's
reference.json and decode-step .npy files; see docs/llm-export.md for the files and how tests use them.
The seeds in export_llm.CONFIGS were picked (among 30 each) so that the fp32 judge emits no EOS id in its 64 greedy
tokens and its smallest top-1 minus top-2 margin is large.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
from typing import List, Optional

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(REPO_ROOT / "tools" / "llm"))

import export_llm  # noqa: E402
import make_references  # noqa: E402

# name -> (config, dtype, quant). fp32-4w: fp32 activations with 4-bit weights; bf16-4w: as ExecuTorch's CI exports.
FIXTURES = {
    f"{config}-{variant}": (config, dtype, quant)
    for config in ("tiny-llama", "tiny-qwen3")
    for variant, dtype, quant in (("fp32", "fp32", "none"), ("bf16", "bf16", "none"),
                                  ("fp32-4w", "fp32", "4w"), ("bf16-4w", "bf16", "4w"))
}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, default=REPO_ROOT / "tests" / "fixtures" / "llm")
    ap.add_argument("--only", nargs="*", choices=sorted(FIXTURES), default=None)
    args = ap.parse_args(argv)
    rows = []
    for name, (config, dtype, quant) in FIXTURES.items():
        if args.only and name not in args.only:
            continue
        d = args.out / name
        if d.exists():
            shutil.rmtree(d)
        print(f"[llm fixtures] {name}", flush=True)
        info = export_llm.export(d / "model.pte", dtype, quant, 32, export_llm.CONFIGS[config].max_seq_len, None,
                                 config=config)
        ref = make_references.write_references(d)
        rows.append((name, info["pte"]["bytes"], ref["min_margin"], ref["eos_steps"], len(set(ref["tokens"]))))
    for name, size, margin, eos, distinct in rows:
        print(f"{name:22s} {size:8d} B  min margin {margin:.4f}  eos {eos}  distinct tokens {distinct}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
