"""The guide's section for each plugin kind names every hook of that kind, as the contract table lists them.

docs/writing-plugins.md gives each kind a section of its own (provider, tool, provider extension,
feature); a hook added to the contract and left out of its kind's section fails here. What the
snippets do is run by test_guide.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_core.plugins.contract import PROVIDER_TWINS
from agent_core.plugins.protocols import HOOKS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-plugins.md"
SECTIONS = {"provider": "7. A provider", "tool": "8. A tool", "extension": "9. A provider extension",
            "feature": "10. A feature"}


def section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


@pytest.mark.parametrize("kind", sorted(SECTIONS))
def test_each_kinds_section_names_all_its_hooks(kind):
    body = section(SECTIONS[kind])
    named = set(re.findall(r"`(\w+)`", body))
    wanted = set(HOOKS[kind]) | (set(PROVIDER_TWINS) if kind == "provider" else set())
    assert sorted(wanted - named) == []


@pytest.mark.parametrize(("kind", "hooks"), [
    ("provider", ["call_api", "initialize_request", "cancel_request"]),
    ("tool", ["stream", "preview", "format_tool_result", "to_display_format"]),
    ("extension", ["initialize_request", "finalize", "process_chunk"]),
    ("feature", ["prepare_tools", "response_finalize", "tool_pre", "get_completions"]),
])
def test_each_kinds_section_runs_its_main_hooks_in_a_snippet(kind, hooks):
    code = "".join(re.findall(r"```python\n(.*?)^```", section(SECTIONS[kind]), re.DOTALL | re.MULTILINE))
    for hook in hooks:
        assert re.search(rf"\b{hook}\b", code), f"no snippet of the {kind} section uses {hook}"
