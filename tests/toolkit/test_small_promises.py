"""Small things a plugin author trips over: usage read like the dict it prints as, the harness's
action with a session dict, the CLI's help saying what --record and --store really do."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message, Session, encode_event
from agent_core.cli import main
from agent_core.testing import PluginHarness, reply, scripted_provider


def test_request_usage_reads_like_the_dict_json_shows():
    model = scripted_provider(reply("hi", usage={"input_tokens": 3, "output_tokens": 2}))
    core = AgentCore(providers=[model])
    result = core.request(core.add_message(core.create_session(), Message(role="user", content="go")), {})
    usage = result.usage
    assert (usage["input_tokens"], usage["output_tokens"], usage["provider_calls"]) == (3, 2, 1)
    assert usage["total_tokens"] == 5 and usage.get("nothing", 0) == 0 and usage.get("output_tokens") == 2
    with pytest.raises(KeyError):
        usage["nothing"]
    done = list(core.stream_request(core.add_message(core.create_session(), Message(role="user", content="go"))))[-1]
    assert b'"usage":{"input_tokens":3,"output_tokens":2,"provider_calls":1}' in encode_event(done)


class Counter:
    name = "counter"

    def get_actions(self, state):
        return [{"id": "count", "label": "Count messages"}]

    def execute_action(self, action_id, session, native_messages, params, context, state):
        return {"session_metadata": {"messages": len(session.messages)}}


def test_the_harness_action_takes_a_session_or_its_dict_and_says_so_otherwise():
    h = PluginHarness(Counter, kind="feature")
    session = Session("s", [Message("user", "a"), Message("assistant", "b")])
    assert h.action("count", {}, session) == {"session_metadata": {"messages": 2}}
    assert h.action("count", {}, session.to_dict()) == {"session_metadata": {"messages": 2}}
    assert h.action("count") == {"session_metadata": {"messages": 0}}
    with pytest.raises(TypeError, match=r"needs a Session \(or its dict form, Session.to_dict\(\)\), got list"):
        h.action("count", {}, [Message("user", "a")])


def test_the_run_help_says_record_takes_any_provider_and_where_sessions_live(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "openai/anthropic" not in text and "any provider with using(client=...)" in text
    assert "$AGENT_CORE_HOME, or when that is unset in the user data directory: ~/.local/share/agent-core" in text
