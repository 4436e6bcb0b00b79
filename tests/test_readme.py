"""The README's test command is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^```sh[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _sh_blocks() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [[line for line in body.splitlines() if line.strip()] for body in FENCE.findall(text)]


def _ci_command() -> str:
    lines = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[-1]


def test_readme_has_exactly_one_sh_block_with_one_line() -> None:
    blocks = _sh_blocks()
    assert len(blocks) == 1, f"expected one ```sh block in README.md, found {len(blocks)}"
    assert len(blocks[0]) == 1, f"the ```sh block should hold one command line, found {blocks[0]}"


def test_readme_command_is_the_ci_command() -> None:
    (readme_line,) = _sh_blocks()[0]
    ci_line = _ci_command()
    assert readme_line == ci_line
    assert "pytest" in readme_line and "pytest" in ci_line
