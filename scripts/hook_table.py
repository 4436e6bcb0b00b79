#!/usr/bin/env python3
"""Render the hook reference in ``docs/conventions.md`` from the protocols' signatures.

    python scripts/hook_table.py           # rewrite the table between its markers
    python scripts/hook_table.py --check   # exit 1 when the page's table is stale

The table is :func:`agent_core.plugins.contract.markdown_table` of
:data:`agent_core.plugins.protocols.HOOKS`: parameters read from the protocols, stage
and default from the contract's table. ``tests/test_hook_reference.py`` fails when the
page differs from what this script would write.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_core.plugins.contract import markdown_table
from agent_core.plugins.protocols import HOOKS

PAGE = Path(__file__).resolve().parent.parent / "docs" / "conventions.md"
BEGIN = "<!-- the hook table: rendered by scripts/hook_table.py from the protocols; do not edit by hand -->\n"
END = "<!-- end of the hook table -->\n"


def rendered(text: str) -> str:
    """``text`` (the page) with the table between its markers as the protocols give it."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest or not tail and END not in rest:
        raise SystemExit(f"{PAGE}: the hook table's markers are missing")
    return head + BEGIN + "\n" + markdown_table(HOOKS) + "\n" + END + tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page's table is stale")
    args = parser.parse_args()
    text = PAGE.read_text()
    new = rendered(text)
    if args.check:
        if new != text:
            print(f"{PAGE} is stale: run python scripts/hook_table.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
