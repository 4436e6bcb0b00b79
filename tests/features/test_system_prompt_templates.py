"""``system_prompt`` templates are client text: only ``{date}``, ``{time}`` and ``{model}`` are filled in.

A template used to be a Python format string, so a client could allocate
100 MB with a format spec or read Python internals through an attribute. These
tests hold the narrower contract: the three exact placeholders are replaced and
every other character is copied as written, whatever the template holds.
"""

from __future__ import annotations

import tracemalloc
from datetime import datetime, timezone

import pytest
from agent_core import AgentCore, Message
from agent_core.testing import reply, scripted_provider
from agent_core_features.system_prompt import PLACEHOLDERS, SystemPromptFeature, render_prompt
from hypothesis import given, settings
from hypothesis import strategies as st

NOW = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
FILLED = {"date": "2026-01-02", "time": "03:04 UTC", "model": "m1"}


def _reference(template: str) -> str:
    """The contract, written as a plain left-to-right scan (no regex), to check the implementation against."""
    out, i = [], 0
    while i < len(template):
        for name in PLACEHOLDERS:
            if template.startswith("{" + name + "}", i):
                out.append(FILLED[name])
                i += len(name) + 2
                break
        else:
            out.append(template[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{x:>100000000}", "{x:>100000000}"),  # a format spec that would allocate 100 MB
        ("{model:>100000000}", "{model:>100000000}"),
        ("{x.__class__} {model.upper} {model.__class__.__mro__}",
         "{x.__class__} {model.upper} {model.__class__.__mro__}"),
        ("{model!r} {date!s} {time:%H}", "{model!r} {date!s} {time:%H}"),
        ("{model[0]} {0} {} {date }", "{model[0]} {0} {} {date }"),
        ("{date} beside {other} and } and {", "2026-01-02 beside {other} and } and {"),  # filled beside stray braces
        ('{"json": {date}}', '{"json": 2026-01-02}'),
        ("{{date}} {{x}}", "{2026-01-02} {{x}}"),  # no escape syntax: doubled braces stay doubled
        ("{model}{model}{time}", "m1m1" + "03:04 UTC"),
    ],
)
def test_only_the_exact_placeholders_are_filled(template, expected):
    assert render_prompt(template, "m1", NOW) == expected


def test_a_wide_format_spec_allocates_nothing_like_its_width():
    tracemalloc.start()
    try:
        out = render_prompt("{model:>100000000}{date:>100000000}", "m1", NOW)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == "{model:>100000000}{date:>100000000}"
    assert peak < 100_000  # bytes; str.format would have needed 200 MB


_PIECES = ["{", "}", ":", ".", "!", ">", "[", "]", "0", " ", "\n", "é", "date", "time", "model", "x", "__class__",
           "{date}", "{model}", "{time}", "!r", ":>9", ".upper"]
_TEMPLATES = st.one_of(st.text(max_size=80), st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))


@settings(max_examples=200, deadline=None)
@given(_TEMPLATES)
def test_any_template_renders_and_only_placeholders_change(template):
    assert render_prompt(template, "m1", NOW) == _reference(template)


@settings(max_examples=100, deadline=None)
@given(_TEMPLATES)
def test_text_without_a_placeholder_is_sent_exactly_as_written(template):
    for name in PLACEHOLDERS:
        template = template.replace("{" + name + "}", "")
    # removing one placeholder can join two halves into another ("{da{date}te}"); clean until stable
    while any("{" + name + "}" in template for name in PLACEHOLDERS):
        for name in PLACEHOLDERS:
            template = template.replace("{" + name + "}", "")
    assert render_prompt(template, "m1", NOW) == template


def test_a_hostile_template_reaches_the_model_as_written():
    seen = []
    Scripted = scripted_provider(reply("ok"))

    class Provider(Scripted):
        def get_config_schema(self):
            return {"model": {"type": "string", "default": "scripted-1", "description": "model id"}}

        def stream_api(self, native_messages, state, *, request_id=None):
            seen.append([dict(m) for m in native_messages])
            return super().stream_api(native_messages, state, request_id=request_id)

        def call_api(self, native_messages, state, *, request_id=None):
            seen.append([dict(m) for m in native_messages])
            return super().call_api(native_messages, state, request_id=request_id)

    core = AgentCore(providers=[Provider], features=[SystemPromptFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    template = "You are {model}. {model.__class__} {x:>100000000} {model!r} {"
    result = core.request(session, {"system_prompt": template, "model": "m9"})
    assert result.outcome.ok
    (sent,) = seen
    assert sent[0] == {"role": "system", "content": "You are m9. {model.__class__} {x:>100000000} {model!r} {"}
