"""Sampling parameters and ``extra_body`` on the wire.

Each optional field is declared in the provider's config schema with its
type, checked by the engine, and sent only when set; ``extra_body`` is
merged into the body as it is. The assertions are on the exact bytes the
loopback server received.
"""

from __future__ import annotations

import pytest
from agent_core import AgentCore, ConfigError, Message
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider

from ._wire import an_text, oa_text
from .test_e2e import Calculator


def make_core() -> AgentCore:
    return AgentCore(
        providers=[OpenAIProvider, AnthropicProvider],
        extensions=[OpenAIToolsExtension, OpenAIReasoningExtension, AnthropicToolsExtension],
    )


def ask(server, provider: str, core: AgentCore | None = None, **config) -> bytes:
    core = core or make_core()
    base = server.url + ("/v1" if provider == "openai" else "")
    session = core.add_message(core.create_session(), Message("user", "hi"))
    cfg = {"provider": provider, "base_url": base, "model": "m", "max_retries": 0, "stream": True, **config}
    result = core.request(session, cfg)
    assert result.outcome.ok, result.outcome
    return server.requests[-1].raw


def test_openai_sends_nothing_optional_when_nothing_is_set(server):
    server.enqueue(oa_text("ok"))
    assert ask(server, "openai") == (
        b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
        b'"stream":true,"stream_options":{"include_usage":true}}'
    )


def test_openai_sends_each_sampling_field_that_is_set_with_its_type(server):
    server.enqueue(oa_text("ok"))
    raw = ask(
        server,
        "openai",
        temperature=0.2,
        max_tokens=32,
        max_completion_tokens=64,
        seed=1,
        top_p=0.9,
        stop=["END", "STOP"],
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        parallel_tool_calls=False,
        response_format={"type": "json_object"},
        logprobs=True,
        top_logprobs=2,
        user="u-42",
    )
    assert raw == (
        b'{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":32,'
        b'"max_completion_tokens":64,"seed":1,"top_p":0.9,"stop":["END","STOP"],"presence_penalty":0.5,'
        b'"frequency_penalty":-0.5,"parallel_tool_calls":false,"response_format":{"type":"json_object"},'
        b'"logprobs":true,"top_logprobs":2,"user":"u-42","stream":true,"stream_options":{"include_usage":true}}'
    )


def test_openai_stop_may_be_one_string(server):
    server.enqueue(oa_text("ok"))
    assert b'"stop":"END"' in ask(server, "openai", stop="END")


def test_extra_body_is_merged_verbatim_and_wins(server):
    server.enqueue(oa_text("ok"))
    raw = ask(
        server, "openai", temperature=0.5,
        extra_body={"min_p": 0.05, "guided_json": {"type": "object"}, "temperature": 0.1},
    )
    assert raw == (
        b'{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.1,"min_p":0.05,'
        b'"guided_json":{"type":"object"},"stream":true,"stream_options":{"include_usage":true}}'
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("seed", "one", "integer"),
        ("top_p", "high", "number"),
        ("stop", 5, "string or array"),
        ("parallel_tool_calls", "yes", "boolean"),
        ("response_format", "json", "object"),
        ("logprobs", 1, "boolean"),
        ("user", 7, "string"),
        ("extra_body", ["x"], "object"),
    ],
)
def test_a_sampling_value_of_the_wrong_type_is_refused_before_any_request(server, key, value, expected):
    with pytest.raises(ConfigError) as info:
        ask(server, "openai", **{key: value})
    assert info.value.key == key and "openai" in info.value.plugins and expected in str(info.value)
    assert server.requests == []


def test_anthropic_sends_nothing_optional_when_nothing_is_set(server):
    server.enqueue(an_text("ok"))
    assert ask(server, "anthropic") == (
        b'{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"hi"}],"stream":true}'
    )


def test_anthropic_sends_each_sampling_field_that_is_set(server):
    server.enqueue(an_text("ok"))
    raw = ask(
        server, "anthropic", max_tokens=100, temperature=0.3, top_p=0.8, top_k=40, stop_sequences=["\n\nHuman:"],
        metadata={"user_id": "u-1"}, extra_body={"service_tier": "auto"},
    )
    assert raw == (
        b'{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"temperature":0.3,'
        b'"top_p":0.8,"top_k":40,"stop_sequences":["\\n\\nHuman:"],"metadata":{"user_id":"u-1"},'
        b'"service_tier":"auto","stream":true}'
    )


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("add", b'"tool_choice":{"type":"tool","name":"add"}'),
        ({"type": "tool", "name": "add", "disable_parallel_tool_use": True},
         b'"tool_choice":{"type":"tool","name":"add","disable_parallel_tool_use":true}'),
        ("any", b'"tool_choice":{"type":"any"}'),
    ],
    ids=["a-tool-name", "object-form", "any"],
)
def test_anthropic_tool_choice_may_name_one_tool(server, choice, sent):
    server.enqueue(an_text("ok"))
    core = AgentCore(providers=[AnthropicProvider], extensions=[AnthropicToolsExtension], tools=[Calculator])
    raw = ask(server, "anthropic", core, tool_choice=choice)
    assert sent in raw


@pytest.mark.parametrize(("key", "value"), [("top_k", 4.5), ("stop_sequences", "END"), ("metadata", "u-1")])
def test_anthropic_refuses_a_sampling_value_of_the_wrong_type(server, key, value):
    with pytest.raises(ConfigError) as info:
        ask(server, "anthropic", **{key: value})
    assert info.value.key == key and "anthropic" in info.value.plugins
    assert server.requests == []


# -- what the model wants ---------------------------------------------------------------


def openai_only() -> AgentCore:
    """The provider alone, so what it sends is its own doing (no openai_reasoning)."""
    return AgentCore(providers=[OpenAIProvider])


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("o1", "max_completion_tokens"),
        ("o1-mini", "max_completion_tokens"),
        ("o3-mini-2025-01-31", "max_completion_tokens"),
        ("o4-mini", "max_completion_tokens"),
        ("gpt-5", "max_completion_tokens"),
        ("gpt-5.1-codex", "max_completion_tokens"),
        ("GPT-5-nano", "max_completion_tokens"),
        ("gpt-4o-mini", "max_tokens"),
        ("gpt-4.1", "max_tokens"),
        ("llama3.2", "max_tokens"),
        ("o10-local", "max_tokens"),
        ("openai/gpt-5", "max_tokens"),  # a router's name: the router maps max_tokens itself
    ],
)
def test_max_tokens_goes_under_the_name_the_model_takes(server, model, field):
    server.enqueue(oa_text("ok"))
    raw = ask(server, "openai", openai_only(), model=model, max_tokens=50)
    other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
    assert f'"{field}":50'.encode() in raw and f'"{other}"'.encode() not in raw


@pytest.mark.parametrize(
    ("choice", "model", "sent"),
    [
        ("max_tokens", "gpt-5", b'"max_tokens":50'),
        ("max_completion_tokens", "llama3.2", b'"max_completion_tokens":50'),
        ("auto", "o3", b'"max_completion_tokens":50'),
    ],
)
def test_token_limit_field_forces_the_name(server, choice, model, sent):
    server.enqueue(oa_text("ok"))
    raw = ask(server, "openai", openai_only(), model=model, max_tokens=50, token_limit_field=choice)
    assert raw == (
        b'{"model":"' + model.encode() + b'","messages":[{"role":"user","content":"hi"}],' + sent
        + b',"stream":true,"stream_options":{"include_usage":true}}'
    )


def test_an_explicit_max_completion_tokens_is_sent_as_it_is_and_wins(server):
    server.enqueue(oa_text("ok"), oa_text("ok"))
    raw = ask(server, "openai", openai_only(), model="gpt-5-mini", max_tokens=50, max_completion_tokens=900)
    assert b'"max_completion_tokens":900' in raw and b":50" not in raw
    raw = ask(server, "openai", openai_only(), model="gpt-4o", max_completion_tokens=900)
    assert b'"max_completion_tokens":900' in raw and b'"max_tokens"' not in raw


def test_reasoning_effort_verbosity_and_n_are_sent_when_set(server):
    server.enqueue(oa_text("ok"))
    raw = ask(server, "openai", openai_only(), model="gpt-5", reasoning_effort="minimal", verbosity="low", n=2)
    assert raw == (
        b'{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"n":2,"reasoning_effort":"minimal",'
        b'"verbosity":"low","stream":true,"stream_options":{"include_usage":true}}'
    )


def test_with_openai_reasoning_enabled_reasoning_effort_is_sent_once(server):
    server.enqueue(oa_text("ok"))
    raw = ask(server, "openai", model="o3", reasoning_effort="high")
    assert raw.count(b'"reasoning_effort":"high"') == 1


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("n", 0, "at least 1"), ("token_limit_field", "max_output_tokens", "one of 'auto'"), ("verbosity", 3, "string")],
)
def test_out_of_range_openai_values_are_refused_before_any_request(server, key, value, expected):
    with pytest.raises(ConfigError) as info:
        ask(server, "openai", openai_only(), **{key: value})
    assert info.value.key == key and expected in str(info.value)
    assert server.requests == []
