"""agent_core.testing.strategies, and property tests of the bundled plugins written with them."""

from __future__ import annotations

import json

from agent_core import Message, Session
from agent_core.testing import PluginHarness
from agent_core.testing.strategies import messages, native_chunks, sessions, splits, tool_calls
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CONFIG = {"model": "m"}
# deadline and the slow-generation check off: the suite shares a loaded machine; these test behaviour, not speed
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text(max_size=30).flatmap(lambda t: st.tuples(st.just(t), splits(t))))
def test_splits_cover_the_text_with_non_empty_pieces(case):
    text, pieces = case
    assert "".join(pieces) == text
    assert all(pieces)


def test_splits_reach_every_cut():
    seen = set()

    @settings(max_examples=200, deadline=None)
    @given(splits("abcd"))
    def collect(pieces):
        seen.add(tuple(pieces))

    collect()
    assert len(seen) == 8  # 2 ** (len - 1): every subset of the three cut points


@FAST
@given(sessions())
def test_sessions_and_messages_round_trip_through_json(session):
    assert isinstance(session, Session)
    assert Session.from_json(session.to_json()) == session
    assert all(isinstance(m, Message) for m in session.messages)


@FAST
@given(tool_calls())
def test_tool_calls_have_the_core_shape(call):
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert isinstance(json.loads(call["function"]["arguments"]), dict)


@FAST
@given(native_chunks("openai"))
def test_openai_text_is_the_same_however_the_stream_is_cut(case):
    text, chunks = case
    record = PluginHarness(OpenAIToolsExtension, CONFIG, provider=OpenAIProvider).stream(chunks)
    assert record.text == text
    assert [m["content"] for m in record.finals] == [text]


@FAST
@given(native_chunks("anthropic"))
def test_anthropic_text_is_the_same_however_the_stream_is_cut(case):
    text, chunks = case
    record = PluginHarness(AnthropicToolsExtension, CONFIG, provider=AnthropicProvider).stream(chunks)
    assert record.text == text
    assert [text_of(m["content"]) for m in record.finals] == [text]


def text_of(content):
    """A native Anthropic final's text: a string, or text blocks."""
    return content if isinstance(content, str) else "".join(b["text"] for b in content if b["type"] == "text")


@FAST
@given(st.lists(messages(roles=("user", "assistant", "tool")), min_size=1, max_size=5))
def test_openai_tools_round_trips_tool_calls_through_the_native_shape(msgs):
    """Every call the core history holds is sent to the API under the same id, name and arguments."""
    provider = PluginHarness(OpenAIProvider, CONFIG)
    native = PluginHarness(OpenAIToolsExtension, CONFIG, provider=OpenAIProvider).to_native(
        msgs, provider.to_native(msgs))
    sent = [(c["id"], c["function"]["name"], c["function"]["arguments"])
            for n in native for c in n.get("tool_calls") or ()]
    held = [(c["id"], c["function"]["name"], c["function"]["arguments"])
            for m in msgs for c in m.metadata.get("tool_calls") or ()]
    assert sent == held
