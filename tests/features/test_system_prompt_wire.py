"""``system_prompt`` on the wire: every provider call of a request carries it, in the provider's own
shape (OpenAI a ``system`` message, Anthropic the top-level ``system`` field), byte for byte against a
loopback server, and neither the session nor the stored native history ever keeps a copy."""

from __future__ import annotations

import json

from agent_core import AgentCore, Message
from agent_core.values.native_history import NATIVE_KEY
from agent_core_features.system_prompt import SystemPromptFeature
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.calculator import CalculatorTool
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider
from providers._server import sse_reply
from providers._wire import OA_DONE, an_block, an_end, an_start, an_text, oa_chunk, oa_text

PROMPT = "Be exact. You are {model}."




def _core() -> AgentCore:
    return AgentCore(providers=[OpenAIProvider, AnthropicProvider],
                     extensions=[OpenAIToolsExtension, AnthropicToolsExtension],
                     features=[SystemPromptFeature], tools=[CalculatorTool])


def _ask(server, provider: str, session=None):
    core = _core()
    session = session or core.add_message(core.create_session("s"), Message("user", "6*7?"))
    base = server.url + ("/v1" if provider == "openai" else "")
    config = {"provider": provider, "base_url": base, "model": "m", "api_key": "sk-test", "max_retries": 0,
              "stream": True, "system_prompt": PROMPT, "enabled_plugins": ["calculator"]}
    result = core.request(session, config)
    assert result.outcome.ok, result.outcome
    return result, [r.raw for r in server.requests]


def _head(raw: bytes) -> bytes:
    """The request body up to the tool schemas (pinned elsewhere), checking they follow."""
    cut = raw.index(b',"tools":[')
    assert b'"name":"calculate"' in raw[cut:]
    return raw[:cut]


OA_SYSTEM = b'{"role":"system","content":"Be exact. You are m."},'
OA_TAIL = b'"stream":true,"stream_options":{"include_usage":true}'


def test_openai_every_call_starts_with_the_system_message_and_none_is_stored(server):
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": "calculate", "arguments": '{"expression": "6*7"}'}}]}),
            oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("42"),
    )
    result, (first, second) = _ask(server, "openai")
    assert _head(first) == b'{"model":"m","messages":[' + OA_SYSTEM + b'{"role":"user","content":"6*7?"}],' + OA_TAIL
    assert _head(second) == (
        b'{"model":"m","messages":[' + OA_SYSTEM + b'{"role":"user","content":"6*7?"},'
        b'{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":'
        b'{"name":"calculate","arguments":"{\\"expression\\": \\"6*7\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"c1","content":"Result: 42"}],' + OA_TAIL
    )
    _never_stored(result)
    # the next request on the returned session still gets exactly one copy, in front
    server.enqueue(oa_text("again"))
    _ask(server, "openai", result.session.with_message(Message("user", "and?")))
    third = server.requests[-1].raw
    assert third.startswith(b'{"model":"m","messages":[' + OA_SYSTEM + b'{"role":"user","content":"6*7?"},')
    assert third.count(b'"role":"system"') == 1


def test_anthropic_every_call_has_the_top_level_system_field_and_none_is_stored(server):
    server.enqueue(
        sse_reply(an_start(), *an_block(0, {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {}},
                                        [{"type": "input_json_delta", "partial_json": '{"expression": "6*7"}'}]),
                  *an_end("tool_use", 5)),
        an_text("42"),
    )
    result, (first, second) = _ask(server, "anthropic")
    system = b'"system":"Be exact. You are m.","stream":true'
    assert _head(first) == b'{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"6*7?"}],' + system
    assert _head(second) == (
        b'{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"6*7?"},'
        b'{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"calculate",'
        b'"input":{"expression":"6*7"}}]},'
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Result: 42"}]}],'
        + system
    )
    for raw in (first, second):
        assert b'"role":"system"' not in raw and raw.count(b"Be exact.") == 1
    _never_stored(result)


def test_a_sessions_own_system_message_follows_the_configured_one_on_the_wire(server):
    server.enqueue(oa_text("ok"))
    core = _core()
    session = core.add_message(core.create_session("s"), Message("system", "Mine."))
    session = core.add_message(session, Message("user", "hi"))
    _ask(server, "openai", session)
    assert server.requests[0].raw.startswith(
        b'{"model":"m","messages":[{"role":"system","content":"Be exact. You are m."},'
        b'{"role":"system","content":"Mine."},{"role":"user","content":"hi"}],')


def _never_stored(result) -> None:
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "assistant"]
    stored = json.dumps(result.session.to_dict()["metadata"].get(NATIVE_KEY))
    assert "Be exact" not in stored and "Be exact" not in result.session.to_json().decode()
