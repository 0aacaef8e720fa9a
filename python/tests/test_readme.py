"""The README's Python quick start runs as written: its `python -c` line and its Python block."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from conftest import REPO

README = (REPO / "README.md").read_text()
SECTION = README[README.index("## From Python"):]
SECTION = SECTION[:SECTION.index("\n## ", 1)] if "\n## " in SECTION[1:] else SECTION


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)


def test_the_python_one_liner_prints_the_outputs() -> None:
    (line,) = [line for block in blocks("sh") for line in block.splitlines() if " -c " in line]
    command = shlex.split(line)
    command[0] = sys.executable  # .venv/bin/python, or whichever Python runs the tests
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert "{'aten_add_tensor': array([[[" in result.stdout


def test_the_python_block_runs() -> None:
    (code,) = blocks("python")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert "(1, 8, 32)" in result.stdout
