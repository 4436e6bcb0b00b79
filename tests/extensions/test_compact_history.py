"""compact_history: the native history shortened by whole turns (dropped or summarized); calls keep their results."""

from __future__ import annotations

import json

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import ActionInputError, ConfigError
from agent_core.testing import PluginHarness, check_plugin
from agent_core_plugins.compact_history import (
    SUMMARY_PREFIX,
    CompactHistoryExtension,
    estimate_tokens,
    split_turns,
)
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider
from hypothesis import given
from hypothesis import strategies as st
from providers._server import json_reply
from providers._wire import oa_text


def test_keeps_the_hook_contract():
    check_plugin(CompactHistoryExtension)


# -- the turn rule, on any history -----------------------------------------------------


@st.composite
def openai_histories(draw):
    """A system message, then turns: a user message, and assistant tool calls each answered, then text."""
    native = [{"role": "system", "content": "Be brief."}]
    for t in range(draw(st.integers(0, 8))):
        native.append({"role": "user", "content": "q" * draw(st.integers(1, 300))})
        for c in range(draw(st.integers(0, 3))):
            cid = f"t{t}c{c}"
            native.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
            native.append({"role": "tool", "tool_call_id": cid, "content": "r" * draw(st.integers(0, 400))})
        native.append({"role": "assistant", "content": "a" * draw(st.integers(0, 200))})
    return native


@given(openai_histories(), st.integers(1, 800))
def test_no_call_is_ever_parted_from_its_result(native, limit):
    out = PluginHarness(CompactHistoryExtension).action("compact_native_history", {"max_context_tokens": limit},
                                                        native=native)
    kept = out.get("native_messages", native)
    assert kept[0] == native[0]  # the system message stays
    assert kept == native[:1] + native[len(native) - len(kept) + 1:]  # a suffix of whole messages
    calls = {c["id"] for m in kept for c in m.get("tool_calls", ())}
    answers = [m["tool_call_id"] for m in kept if m["role"] == "tool"]
    assert set(answers) == calls  # every kept call has its result, and every result its call
    if len(kept) > 1:
        assert kept[1]["role"] == "user"  # a turn starts the kept history
    _, turns = split_turns(kept)
    if len(turns) > 1:  # over the limit only when the newest turn alone is
        assert sum(estimate_tokens(m) for m in kept) <= limit


def test_anthropic_tool_results_stay_with_their_calls():
    native = [
        {"role": "user", "content": "old question " * 50},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "x" * 400}]},
        {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]},
        {"role": "user", "content": "new question"},
        {"role": "assistant", "content": [{"type": "text", "text": "new answer"}]},
    ]
    prefix, turns = split_turns(native)
    assert prefix == [] and [len(t) for t in turns] == [4, 2]
    out = PluginHarness(CompactHistoryExtension).action("compact_native_history", {"max_context_tokens": 30},
                                                        native=native)
    assert out["native_messages"] == native[4:]
    assert out["compact_history"] == {"mode": "drop", "dropped_messages": 4, "kept_messages": 2,
                                      "estimated_tokens_before": sum(map(estimate_tokens, native)),
                                      "estimated_tokens_after": sum(map(estimate_tokens, native[4:]))}


def test_a_history_within_the_limit_is_left_alone():
    native = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    out = PluginHarness(CompactHistoryExtension).action("compact_native_history", {}, native=native)
    assert "native_messages" not in out and out["compact_history"]["dropped_messages"] == 0


# -- through the engine, against a loopback OpenAI-compatible server --------------------




def _conversation(server, core, config, turns: int):
    session = core.create_session("long")
    for i in range(turns):
        server.enqueue(oa_text(f"answer {i}"))
        session = core.add_message(session, Message("user", f"question {i}: " + "words " * 100))
        result = core.request(session, config)
        assert result.outcome.ok, result.outcome
        session = result.session
    return session


def _core() -> AgentCore:
    return AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension, CompactHistoryExtension])


def _config(server) -> dict:
    return {"provider": "openai", "base_url": server.url + "/v1", "model": "m", "api_key": "sk-test-key-4242",
            "max_retries": 0, "stream": True}


def test_dropping_turns_shortens_what_the_next_request_sends(server):
    core, config = _core(), _config(server)
    session = _conversation(server, core, config, 4)
    result = core.execute_action(session, "compact_native_history", {"max_context_tokens": 400}, config)
    assert result.payload["compact_history"]["dropped_messages"] == 4  # two whole turns
    assert result.session.messages == session.messages  # the application keeps every core message
    assert result.session.metadata["compact_history"]["mode"] == "drop"

    server.enqueue(oa_text("answer 4"))
    nxt = core.request(core.add_message(result.session, Message("user", "question 4")), config)
    sent = [m["content"] for m in json.loads(server.requests[-1].raw)["messages"]]
    assert sent == ["question 2: " + "words " * 100, "answer 2", "question 3: " + "words " * 100, "answer 3",
                    "question 4"]
    assert [m.content for m in nxt.session.messages][-1] == "answer 4"
    assert len(nxt.session.messages) == 10  # nothing lost on the application's side


def test_summarizing_asks_the_model_with_the_requests_key_and_sends_the_summary(server):
    core, config = _core(), _config(server)
    session = _conversation(server, core, config, 3)
    server.enqueue(json_reply({"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": "The user asked questions 0 and 1."}}]}))
    result = core.execute_action(session, "compact_native_history",
                                 {"max_context_tokens": 250, "instructions": "Summarize in one line."}, config)
    asked = server.requests[-1]
    assert asked.headers["authorization"] == "Bearer sk-test-key-4242"
    (prompt,) = json.loads(asked.raw)["messages"]
    assert prompt["content"].startswith("Summarize in one line.") and "answer 1" in prompt["content"]
    assert len(prompt["content"].encode()) < 250 * 4 + 100  # the transcript is capped at the token budget
    assert "tools" not in json.loads(asked.raw)  # the side request offers no tools

    server.enqueue(oa_text("ok"))
    core.request(core.add_message(result.session, Message("user", "and now?")), config)
    sent = [m["content"] for m in json.loads(server.requests[-1].raw)["messages"]]
    assert sent[0] == SUMMARY_PREFIX + "The user asked questions 0 and 1."
    assert not any("question 0" in s or "question 1" in s for s in sent)
    assert sent[-1] == "and now?"


def test_bad_inputs_are_typed_errors_and_the_session_is_untouched(server):
    core, config = _core(), _config(server)
    session = core.add_message(core.create_session(), Message("user", "hi"))
    with pytest.raises(ConfigError) as err:
        core.execute_action(session, "compact_native_history", {"mode": "shred"}, config)
    assert err.value.key == "mode"
    with pytest.raises(ActionInputError) as err2:
        core.execute_action(session, "compact_native_history", {"max_context_tokens": "many"}, config)
    assert err2.value.input == "max_context_tokens"
    assert [m.content for m in session.messages] == ["hi"] and server.requests == []
