#!/usr/bin/env python3
"""Write the JSON Schemas in ``schemas/`` from agent-core's value types.

Regenerate after changing a type in ``core/agent_core`` (from the repo root):

    python scripts/generate_schemas.py           # rewrite schemas/*.schema.json
    python scripts/generate_schemas.py --check   # exit 1, listing stale files

Each schema is ``msgspec.json.schema(type)`` plus a ``$schema`` key naming
JSON Schema draft 2020-12 (the draft msgspec's ``$ref``/``$defs`` output
follows), dumped with sorted keys and a trailing newline so that diffs stay
small and the output is byte-for-byte reproducible.

To publish another type, add one ``(file name, type)`` row to ``SCHEMAS``.
``tests/test_schemas.py`` fails when a checked-in file differs from what this
script would write, so a forgotten regeneration shows up in CI.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schemas"

try:
    import agent_core  # noqa: F401  (installed, e.g. `pip install -e .`)
except ImportError:  # running from a plain checkout: use the source tree
    sys.path.insert(0, str(ROOT / "core"))

from agent_core.types import Message, PartialMessage, Session, ToolDescriptor  # noqa: E402
from agent_core.values.events import Event, Outcome, Usage  # noqa: E402

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# One row per published schema: (file name inside schemas/, type).
SCHEMAS: list[tuple[str, Any]] = [
    ("message.schema.json", Message),
    ("partial_message.schema.json", PartialMessage),
    ("session.schema.json", Session),
    ("tool_descriptor.schema.json", ToolDescriptor),
    ("event.schema.json", Event),
    ("outcome.schema.json", Outcome),
    ("usage.schema.json", Usage),
]

# Files in schemas/ with this suffix are owned by this script: one that no
# row produces any more is stale and is removed on regeneration.
SUFFIX = ".schema.json"


def render(tp: Any) -> str:
    """Return the schema text for ``tp`` exactly as it is stored on disk."""
    schema = {"$schema": DRAFT, **_clean_descriptions(msgspec.json.schema(tp))}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _clean_descriptions(node: Any) -> Any:
    """``node`` with every ``description`` dedented as ``inspect.cleandoc`` does.

    msgspec 0.23 dedents the docstrings it puts in a schema and 0.22 did not; cleaning them
    here makes the files the same whichever version writes them.
    """
    if isinstance(node, dict):
        return {k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else _clean_descriptions(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_clean_descriptions(v) for v in node]
    return node


def expected_files() -> dict[str, str]:
    """Map each file name in ``SCHEMAS`` to the text it should hold.

    Raises:
        ValueError: two rows share a file name, or a name lacks the suffix.
    """
    out: dict[str, str] = {}
    for name, tp in SCHEMAS:
        if not name.endswith(SUFFIX):
            raise ValueError(f"schema file name {name!r} must end with {SUFFIX!r}")
        if name in out:
            raise ValueError(f"schema file name {name!r} appears twice in SCHEMAS")
        out[name] = render(tp)
    return out


def stale_files(directory: Path = SCHEMA_DIR, expected: dict[str, str] | None = None) -> list[str]:
    """Names of files in ``directory`` that are missing, outdated or orphaned.

    An orphan is a ``*.schema.json`` file that no row of ``SCHEMAS`` produces.
    ``expected`` defaults to :func:`expected_files`. Returns the names
    sorted; an empty list means everything is current.
    """
    if expected is None:
        expected = expected_files()
    stale = [
        name
        for name, text in expected.items()
        if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text
    ]
    if directory.is_dir():
        stale += [p.name for p in directory.glob(f"*{SUFFIX}") if p.name not in expected]
    return sorted(stale)


def write(directory: Path = SCHEMA_DIR) -> list[str]:
    """Bring ``directory`` up to date; return the names written or removed."""
    expected = expected_files()
    changed = stale_files(directory, expected)
    directory.mkdir(parents=True, exist_ok=True)
    for name in changed:
        path = directory / name
        if name in expected:
            path.write_text(expected[name], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate schemas/*.schema.json from agent-core's types.")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and list the files that are stale",
    )
    parser.add_argument("--dir", type=Path, default=SCHEMA_DIR, help="target directory (default: schemas/)")
    args = parser.parse_args(argv)

    if args.check:
        stale = stale_files(args.dir)
        for name in stale:
            print(f"stale: {args.dir / name}", file=sys.stderr)
        if stale:
            print("run: python scripts/generate_schemas.py", file=sys.stderr)
            return 1
        return 0

    for name in write(args.dir):
        print(f"updated: {args.dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
