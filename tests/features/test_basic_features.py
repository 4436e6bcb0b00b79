"""``system_prompt``, ``timestamps`` and ``usage``: in isolation (harness) and through whole requests."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import ConfigError
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider, tool_call
from agent_core_features.system_prompt import SystemPromptFeature, render_prompt
from agent_core_features.timestamps import TimestampsFeature
from agent_core_features.usage import UsageFeature, cost_of
from agent_core_plugins.calculator import CalculatorTool
from agent_core_providers.echo import EchoProvider

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.mark.parametrize("feature", [SystemPromptFeature, TimestampsFeature, UsageFeature])
def test_features_keep_the_hook_contract(feature):
    check_plugin(feature)


# -- system_prompt ----------------------------------------------------------------------

def test_render_fills_date_time_and_model_and_keeps_other_braces():
    now = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
    assert render_prompt("{date} {time} {model} {other}", "m1", now) == "2026-01-02 03:04 UTC m1 {other}"
    assert render_prompt("a { b", "m1", now) == "a { b"


def test_the_prompt_reaches_the_provider_call_but_is_not_stored():
    seen = []

    class Spy:
        name = "spy"
        priority = 200

        def initialize_request(self, native_messages, state):
            seen.append([dict(m) for m in native_messages])
            return native_messages, state

    core = AgentCore(providers=[EchoProvider], features=[SystemPromptFeature, Spy])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    result = core.request(session, {"system_prompt": "You are {model}."})
    assert seen[-1][0] == {"role": "system", "content": "You are echo-1."}
    assert [m.role for m in result.session.messages] == ["user", "assistant"]
    # a session with its own system message gets the configured one first (the default policy) ...
    own = core.add_message(core.create_session(), Message(role="system", content="Mine."))
    own = core.add_message(own, Message(role="user", content="hi"))
    core.request(own, {"system_prompt": "You are {model}."})
    assert [m["content"] for m in seen[-1] if m["role"] == "system"] == ["You are echo-1.", "Mine."]
    # ... or none, when the configured prompt is only a fallback
    core.request(own, {"system_prompt": "You are {model}.", "system_prompt_policy": "fallback"})
    assert [m["content"] for m in seen[-1] if m["role"] == "system"] == ["Mine."]


def test_the_prompt_goes_first_whatever_the_conversation_brings_unless_the_policy_says_otherwise():
    import pytest
    from agent_core.errors import ConfigError

    harness = PluginHarness(SystemPromptFeature, {"system_prompt": "Be brief, {model}.", "model": "m"})
    (action,) = harness.plugin.get_actions(harness.state)
    assert action["trigger"] == "llm_request"
    user_only = Session("s", [Message(role="user", content="hi")])
    injected = {"context_injection": "Be brief, m.", "context_injection_role": "system"}
    out = harness.plugin.execute_action(action["id"], user_only, [], {}, {"config": harness.config}, harness.state)
    assert out == injected
    own = user_only.with_message(Message(role="system", content="Mine."))
    assert harness.plugin.execute_action(action["id"], own, [], {}, {"config": harness.config}, harness.state) == injected
    fallback = {**harness.config, "system_prompt_policy": "fallback"}
    assert harness.plugin.execute_action(action["id"], own, [], {}, {"config": fallback}, harness.state) == {}
    assert harness.plugin.execute_action(action["id"], user_only, [], {}, {"config": fallback}, harness.state) == injected
    refuse = {**harness.config, "system_prompt_policy": "refuse"}
    with pytest.raises(ConfigError) as refused:
        harness.plugin.execute_action(action["id"], own, [], {}, {"config": refuse}, harness.state)
    assert refused.value.key == "system_prompt_policy"
    assert harness.plugin.execute_action(action["id"], user_only, [], {}, {"config": refuse}, harness.state) == injected


def test_system_prompt_is_off_without_a_prompt():
    core = AgentCore(providers=[EchoProvider], features=[SystemPromptFeature])
    assert core.resolve({}).reasons["system_prompt"].startswith("off")
    assert core.resolve({"system_prompt": "x"}).reasons["system_prompt"].startswith("on")


# -- timestamps ---------------------------------------------------------------------------

def test_every_final_gets_a_utc_timestamp_and_an_existing_one_stays():
    harness = PluginHarness(TimestampsFeature)
    out = harness.from_native([], [{"role": "assistant", "content": "a"},
                                   {"role": "assistant", "content": "b", "metadata": {"timestamp": "old"}}])
    assert ISO.match(out[0]["metadata"]["timestamp"]) and out[1]["metadata"]["timestamp"] == "old"


def test_timestamps_in_a_request_and_its_footer():
    core = AgentCore(providers=[EchoProvider], features=[TimestampsFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    assert "timestamp" not in core.request(session, {}).session.messages[-1].metadata  # opt-in
    result = core.request(session, {"enabled_plugins": ["timestamps"]})
    assert ISO.match(result.session.messages[-1].metadata["timestamp"])
    (footer,) = core.get_ui_schema({"enabled_plugins": ["timestamps"]})
    assert footer == {"ui_type": "message_footer", "data": "metadata.timestamp", "template": "{{data}}",
                      "label": "Time", "plugin": "timestamps"}


# -- usage --------------------------------------------------------------------------------

PRICES = {"scripted-1": {"input": 2.0, "output": 10.0, "cached": 0.5}, "*": {"input": 1.0, "output": 1.0}}


def test_cost_charges_cached_input_at_its_own_price():
    usage = {"input_tokens": 1000, "cache_read_tokens": 400, "output_tokens": 100}
    assert cost_of(usage, PRICES, "scripted-1") == pytest.approx((600 * 2 + 400 * 0.5 + 100 * 10) / 1e6)
    assert cost_of(usage, PRICES, "other") == pytest.approx(1100 / 1e6)
    assert cost_of(usage, {}, "other") is None


def test_usage_adds_up_over_a_tool_loop_and_across_requests(agent_snapshot):
    Provider = scripted_provider(
        reply(tool_calls=[tool_call("calculate", {"expression": "1+1"})],
              usage={"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 40}),
        reply("2", usage={"input_tokens": 120, "output_tokens": 5}),
        reply("again", usage={"input_tokens": 200, "output_tokens": 1}),
    )
    core = AgentCore(providers=[Provider], features=[UsageFeature], tools=[CalculatorTool])
    session = core.add_message(core.create_session(), Message(role="user", content="1+1?"))
    config = {"prices": {"*": PRICES["scripted-1"]}, "enabled_plugins": ["calculator"]}  # no model key here
    first = core.request(session, config)
    total = first.session.metadata["usage"]
    assert total["input_tokens"] == 220 and total["output_tokens"] == 15 and total["messages"] == 2
    assert total["cost"] == pytest.approx((60 * 2 + 40 * 0.5 + 10 * 10 + 120 * 2 + 5 * 10) / 1e6)
    answer = first.session.messages[-1]
    assert answer.metadata["usage"]["cost"] == pytest.approx((120 * 2 + 5 * 10) / 1e6)
    again = core.request(core.add_message(first.session, Message(role="user", content="more")), config)
    assert again.session.metadata["usage"]["input_tokens"] == 420
    assert again.session.metadata["usage"]["messages"] == 3
    assert list(first.session.messages) == agent_snapshot  # the native history is the engine's business


def test_usage_ui_has_a_status_bar_and_a_footer():
    core = AgentCore(providers=[EchoProvider], features=[UsageFeature])
    kinds = [(e["ui_type"], e["data"]) for e in core.get_ui_schema({})]
    assert kinds == [("status_bar", "session.metadata.usage"), ("message_footer", "metadata.usage")]
    assert core.get_ui_schema({"disabled_plugins": ["usage"]}) == []


def test_usage_follows_the_ordinary_enablement_rules():
    """On by default (it only records), off with disabled_plugins; prices are needed for cost only."""
    Provider = scripted_provider(reply("a", usage={"input_tokens": 10, "output_tokens": 2}))
    core = AgentCore(providers=[Provider], features=[UsageFeature])
    assert core.resolve({}).reasons["usage"].startswith("on")
    assert core.resolve({"disabled_plugins": ["usage"]}).reasons["usage"].startswith("off")
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    tokens_only = core.request(session, {})
    assert tokens_only.session.metadata["usage"] == {"input_tokens": 10, "output_tokens": 2, "messages": 1}
    assert "cost" not in tokens_only.session.messages[-1].metadata["usage"]  # no price, no made-up zero
    off = core.request(session, {"disabled_plugins": ["usage"], "prices": {"*": {"input": 1, "output": 1}}})
    assert "usage" not in off.session.metadata


def test_a_price_is_found_under_the_reported_snapshot_name_or_the_configured_model():
    Provider = scripted_provider(
        reply("a", usage={"input_tokens": 1_000_000, "output_tokens": 0}, metadata={"model": "gpt-x-2024-07-18"}),
    )
    core = AgentCore(providers=[Provider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    prices = {"gpt-x": {"input": 0.15, "output": 0.6}, "*": {"input": 99, "output": 99}}
    by_config = core.request(session, {"model": "gpt-x", "prices": prices})
    assert by_config.session.metadata["usage"]["cost"] == pytest.approx(0.15)  # not "*"'s 99
    exact = core.request(session, {"model": "gpt-x", "prices": {**prices, "gpt-x-2024-07-18": {"input": 0.1}}})
    assert exact.session.metadata["usage"]["cost"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("prices", "words"),
    [([1, 2], "must be object"),
     ({"m": 0.15}, "prices['m'] must be a mapping"),
     ({"m": {"input_tokens": 0.15}}, "has 'input_tokens'; expected input, output, cached"),
     ({"m": {"input": -1}}, "must be a number >= 0"),
     ({"m": {"output": "cheap"}}, "must be a number >= 0")],
)
def test_a_malformed_prices_is_a_config_error_before_anything_is_sent(prices, words):
    calls = []

    class Provider(EchoProvider):
        def call_api(self, *args, **kwargs):
            calls.append(1)
            return super().call_api(*args, **kwargs)

    core = AgentCore(providers=[Provider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    with pytest.raises(ConfigError) as err:
        core.request(session, {"prices": prices})
    assert err.value.key == "prices" and words in str(err.value)
    assert calls == []


def test_a_reply_without_usage_leaves_the_session_alone():
    core = AgentCore(providers=[EchoProvider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    assert "usage" not in core.request(session, {}).session.metadata
