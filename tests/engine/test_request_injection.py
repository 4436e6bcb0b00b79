"""``llm_request``: per-call context from lifecycle actions, converted by the provider chain and never stored."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import ActionInputError, PluginError
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core_plugins.calculator import CalculatorTool


def _feature(answer: Any, log: list[Any]) -> type:
    class Reminder:
        name = "reminder"

        def get_actions(self, state):
            return [{"id": "remind", "trigger": "llm_request"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            log.append((context["lifecycle"], context["iteration"], len(native_messages)))
            return answer(context) if callable(answer) else answer

    return Reminder


class Spy:
    """Records what each provider call is sent (after the injections, before the provider builds it)."""

    name = "spy"
    priority = 999
    seen: list[list[dict[str, Any]]] = []

    def initialize_request(self, native_messages, state):
        Spy.seen.append([dict(m) for m in native_messages])
        return native_messages, state


def _run(answer: Any) -> tuple[Any, list[Any]]:
    log: list[Any] = []
    Spy.seen = []
    provider = scripted_provider(reply(tool_calls=[tool_call("calculate", {"expression": "1+1"}, id="t")]),
                                 reply("done"))
    core = AgentCore(providers=[provider], features=[_feature(answer, log), Spy], tools=[CalculatorTool])
    result = core.request(Session("s", [Message("user", "go")]), {"enabled_plugins": ["calculator"]})
    return result, log


def test_every_provider_call_gets_the_injection_and_the_session_keeps_none() -> None:
    result, log = _run(lambda ctx: {"context_injection": f"call {ctx['iteration']}"})
    assert [(lc, it) for lc, it, _ in log] == [("llm_request", 1), ("llm_request", 2)]
    assert [n for *_, n in log] == [1, 3]  # the stored history they were asked about: no earlier injection
    first, second = Spy.seen
    assert first[0] == {"role": "system", "content": "call 1"} and len(first) == 2
    assert second[0] == {"role": "system", "content": "call 2"} and len(second) == 4
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "assistant"]
    assert "call 1" not in result.session.to_json().decode()  # nor in the stored native history


def test_a_user_injection_goes_after_the_history() -> None:
    _run({"context_injection": "be quick", "context_injection_role": "user"})
    assert Spy.seen[0][-1]["content"] == "be quick" and Spy.seen[0][0]["content"] == "go"


def test_an_action_without_an_injection_changes_nothing() -> None:
    result, _ = _run({})
    assert [len(s) for s in Spy.seen] == [1, 3]
    assert result.outcome.ok


@pytest.mark.parametrize(
    "answer", [{"context_injection": 5}, {"context_injection": "x", "context_injection_role": "boss"}]
)
def test_a_bad_injection_is_a_plugin_error_naming_the_feature(answer: Any) -> None:
    with pytest.raises(PluginError) as err:
        _run(answer)
    assert err.value.plugin == "reminder" and "llm_request" in str(err.value)


def test_llm_request_runs_only_inside_requests() -> None:
    core = AgentCore(providers=[scripted_provider("x")], features=[_feature({}, [])])
    with pytest.raises(ActionInputError):
        core.execute_lifecycle_actions(Session("s"), "llm_request")
