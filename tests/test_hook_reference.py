"""The hook reference in docs/conventions.md is the protocols' signatures, rendered: never a second statement.

The hooks' parameters are stated once, as the protocols' Python signatures; the page's
table is rendered from them (``scripts/hook_table.py``). Each row is read back here and
held to the signature of the protocol method it names, so an edited page or a changed
signature fails until the table is rendered again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_core.plugins.contract import KIND_NAMES, ROWS, markdown_table, render_signature
from agent_core.plugins.protocols import (
    HOOKS,
    FeaturePlugin,
    ProviderExtensionPlugin,
    ProviderPlugin,
    ToolPlugin,
)

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "conventions.md"
PROTOCOLS = {"provider": ProviderPlugin, "extension": ProviderExtensionPlugin, "feature": FeaturePlugin,
             "tool": ToolPlugin}


def _rows() -> list[list[str]]:
    text = PAGE.read_text()
    table = text.split("<!-- the hook table:", 1)[1].split("<!-- end of the hook table -->", 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("| ")][1:]  # past the header
    return [[cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in lines]


def test_each_row_is_the_signature_of_the_protocol_method_it_names():
    wrong = []
    for kind, hook, params, _stage, _default in _rows():
        fn = getattr(PROTOCOLS[kind], hook)
        if params != f"({render_signature(fn)})":
            wrong.append(f"{kind}.{hook}: the page says {params}, the protocol ({render_signature(fn)})")
    assert wrong == []


def test_the_table_has_a_row_for_every_hook_of_every_kind_and_no_other():
    got = [(kind, hook, stage, default) for kind, hook, _params, stage, default in _rows()]
    assert got == [(kind, h, stage, default) for kind in KIND_NAMES for h, stage, default in ROWS[kind]]


def test_the_page_is_what_the_script_renders():
    assert markdown_table(HOOKS) in PAGE.read_text()
    done = subprocess.run([sys.executable, "scripts/hook_table.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_changed_signature_shows_in_the_rendered_table():
    """The rendering reads the signature itself: a protocol method with another parameter renders it."""
    class Wider(ProviderPlugin):
        def process_chunk(self, native_chunk, native_messages, state, *, extra=None):  # type: ignore[override]
            return [], [], native_messages, state

    assert render_signature(Wider.process_chunk) == "native_chunk, native_messages, state, *, extra="
