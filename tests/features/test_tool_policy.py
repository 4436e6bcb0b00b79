"""``tool_policy``: allow / deny / ask through real requests, the approval callback and its timeout."""

from __future__ import annotations

import asyncio
import threading

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import ConfigError, PluginError
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider, tool_call
from agent_core_features.tool_policy import ToolPolicyFeature, rule_for
from agent_core_plugins.calculator import CalculatorTool
from agent_core_plugins.files import FilesTool


def _provider():
    return scripted_provider(
        reply(tool_calls=[tool_call("calculate", {"expression": "6*7"}, id="calc"),
                          tool_call("list_dir", {}, id="ls")]),
        reply("done"),
    )


def _run(config, approval=None, tmp_path=None):
    core = AgentCore(providers=[_provider()], features=[ToolPolicyFeature], tools=[CalculatorTool, FilesTool],
                     approval=approval)
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    events = list(core.stream_request(session, {**config, "enabled_plugins": ["calculator", "files"]}))
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    return events[-1], results


def _decisions(session):
    """Each call's recorded decision, read from its tool message (where the policy writes it)."""
    assert "tool_policy" not in session.metadata  # no side table
    return {m.metadata["tool_call_id"]: m.metadata["tool_policy"] for m in session.messages if m.role == "tool"}


def test_tool_policy_keeps_the_hook_contract():
    check_plugin(ToolPolicyFeature)


def test_rules_fall_back_to_star_then_allow():
    assert rule_for({"a": "deny", "*": "ask"}, "a") == "deny"
    assert rule_for({"a": "deny", "*": "ask"}, "b") == "ask"
    assert rule_for({"a": "deny"}, "b") == "allow"


def test_deny_and_allow(tmp_path):
    done, results = _run({"tool_policy": {"calculate": "allow", "*": "deny"}, "files_root": str(tmp_path)})
    assert results["calc"].success and results["calc"].message.content == "Result: 42"
    assert not results["ls"].success
    assert "denied by tool_policy" in results["ls"].message.content
    assert _decisions(done.session) == {
        "calc": {"rule": "allow", "decision": "allowed", "reason": "allowed by tool_policy"},
        "ls": {"rule": "deny", "decision": "denied",
               "reason": "tool call denied by tool_policy: tool_policy says deny for 'list_dir'"},
    }
    # the tool_result event is announced after tool_post, so it carries the record too
    assert results["ls"].message.metadata["tool_policy"]["decision"] == "denied"
    assert results["ls"].message == next(m for m in done.session.messages if m.metadata.get("tool_call_id") == "ls")


def test_ask_goes_to_the_approval_callback(tmp_path):
    asked = []

    def approval(request):
        asked.append((request.tool_name, request.plugin, request.timeout, request.default))
        return request.tool_name == "calculate"

    done, results = _run({"tool_policy": {"*": "ask"}, "approval_timeout_s": 30, "files_root": str(tmp_path)},
                         approval)
    assert asked == [("calculate", "tool_policy", 30.0, "deny"), ("list_dir", "tool_policy", 30.0, "deny")]
    assert results["calc"].success and not results["ls"].success
    decisions = _decisions(done.session)
    assert decisions["calc"]["decision"] == "allowed"
    assert decisions["calc"]["reason"] == "approved by the approval callback"
    assert decisions["ls"]["decision"] == "denied" and "not approved" in decisions["ls"]["reason"]


def test_ask_without_an_answer_in_time_takes_the_default(tmp_path):
    release = threading.Event()

    def approval(request):
        release.wait(30)  # nobody answers
        return True

    try:
        done, results = _run({"tool_policy": {"calculate": "ask"}, "approval_timeout_s": 0.2,
                              "files_root": str(tmp_path)}, approval)
    finally:
        release.set()
    assert not results["calc"].success and "no answer within 0.2 s" in results["calc"].message.content
    assert results["ls"].success  # no rule for it: allowed
    assert _decisions(done.session)["calc"]["decision"] == "denied"
    # approval_default: allow lets it run after the timeout
    release.clear()
    try:
        done, results = _run({"tool_policy": {"calculate": "ask"}, "approval_timeout_s": 0.2,
                              "approval_default": "allow", "files_root": str(tmp_path)}, approval)
    finally:
        release.set()
    assert results["calc"].success


def test_ask_with_nobody_to_ask_denies(tmp_path):
    _, results = _run({"tool_policy": {"calculate": "ask"}, "files_root": str(tmp_path)})
    assert not results["calc"].success and "not approved" in results["calc"].message.content


@pytest.mark.parametrize(
    ("config", "key"),
    [({"tool_policy": {"calculate": "maybe"}}, "tool_policy"),
     ({"tool_policy": {"*": "ask"}, "approval_default": "perhaps"}, "approval_default"),
     ({"tool_policy": {"*": "ask"}, "approval_timeout_s": -1}, "approval_timeout_s")],
)
def test_a_bad_policy_is_a_clear_error_naming_the_key(config, key):
    with pytest.raises(ConfigError) as err:
        PluginHarness(ToolPolicyFeature, config)
    assert err.value.key == key and key in str(err.value)
    core = AgentCore(providers=[_provider()], features=[ToolPolicyFeature], tools=[CalculatorTool])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    with pytest.raises((ConfigError, PluginError)) as err:
        core.request(session, config)
    assert key in str(err.value)


def test_off_without_a_policy():
    core = AgentCore(providers=[_provider()], features=[ToolPolicyFeature], tools=[CalculatorTool])
    assert core.resolve({}).reasons["tool_policy"].startswith("off")
    assert core.resolve({"tool_policy": {"*": "ask"}}).reasons["tool_policy"].startswith("on")


def test_ask_with_an_async_callback_through_arequest(tmp_path):
    async def approval(request):
        await asyncio.sleep(0)
        return "allow" if request.tool_name == "list_dir" else "deny"

    core = AgentCore(providers=[_provider()], features=[ToolPolicyFeature], tools=[CalculatorTool, FilesTool],
                     approval=approval)
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    config = {"tool_policy": {"*": "ask"}, "files_root": str(tmp_path), "enabled_plugins": ["calculator", "files"]}
    result = asyncio.run(core.arequest(session, config))
    decisions = _decisions(result.session)
    assert decisions["calc"]["decision"] == "denied" and decisions["ls"]["decision"] == "allowed"
    tool_messages = {m.metadata["tool_call_id"]: m for m in result.session.messages if m.role == "tool"}
    assert tool_messages["ls"].content == "Result: (empty directory)"
