#!/usr/bin/env python3
"""Check that `tools/export_llm.py --payload-only` gives the real export's MLX payload, byte for byte.

For each random config, dtype and quantisation asked for, it runs the real export (`--out`, random weights) and the
weightless one (`--payload-only`), each in its own process as a user would, takes the payload out of the real
.pte (`export_pte_fixtures.inspect_pte`, as `llm_decode --extract` does) and compares the bytes. Exit status 1 if
any differs. Rerun it after upgrading executorch, torch, torchao or transformers: `--payload-only` replaces a few
of their functions (`export_llm.weights_untouched`).

Usage ($VENV: the export venv of docs/llm-export.md; the tiny configs take about 10 minutes on 2 cores, the llama-1b
pair about 10 more and 13 GB):
  $VENV/bin/python tools/llm/check_payload_only.py
  $VENV/bin/python tools/llm/check_payload_only.py --configs llama-1b --dtypes bf16
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
from typing import List, Optional

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
EXPORT_LLM = REPO_ROOT / "tools" / "export_llm.py"
sys.path.insert(0, str(REPO_ROOT / "tools" / "fixtures"))


def export(args: List[str], log: pathlib.Path) -> None:
    with log.open("w") as out:
        subprocess.run([sys.executable, str(EXPORT_LLM), *args], check=True, stdout=out, stderr=subprocess.STDOUT)


def check(config: str, dtype: str, quant: str, work: pathlib.Path) -> bool:
    import export_pte_fixtures as ptefx

    name = f"{config}-{dtype}-{quant}"
    common = ["--config", config, "--dtype", dtype, "--quant", quant]
    real_pte = work / name / "model.pte"
    weightless = work / f"{name}.mlxg"
    export(common + ["--out", str(real_pte)], work / f"{name}.real.log")
    export(common + ["--payload-only", str(weightless)], work / f"{name}.weightless.log")
    _, real, _ = ptefx.inspect_pte(real_pte.read_bytes())
    same = real == weightless.read_bytes()
    print(f"{name}: {'identical' if same else 'DIFFERENT'} ({len(real)} bytes real, "
          f"{weightless.stat().st_size} weightless)", flush=True)
    return same


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", default=["tiny-llama", "tiny-qwen3"])
    ap.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--quants", nargs="+", default=["none", "4w"])
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wgml_payload_check_") as tmp:
        results = [check(c, d, q, pathlib.Path(tmp)) for c in args.configs for d in args.dtypes for q in args.quants]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
