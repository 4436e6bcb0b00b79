"""``title``: set once after the first answer, from the first user line or a model-written title."""

from __future__ import annotations

from agent_core import AgentCore, Message
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider
from agent_core_features.title import TitleFeature, first_user_line
from agent_core_providers.echo import EchoProvider


def test_title_keeps_the_hook_contract():
    check_plugin(TitleFeature)


def test_first_user_line():
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "\n  Plan   a trip\nmore"}]
    assert first_user_line(messages) == "Plan a trip"
    assert first_user_line([{"role": "user", "content": "w" * 100}]) == "w" * 59 + "…"
    assert first_user_line([]) == ""


def test_the_first_user_line_becomes_the_title_and_stays():
    core = AgentCore(providers=[EchoProvider], features=[TitleFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="Plan a trip to Oslo\nin May"))
    on = {"enabled_plugins": ["title"]}
    assert "title" not in core.request(session, {}).session.metadata  # opt-in
    first = core.request(session, on).session
    assert first.metadata["title"] == "Plan a trip to Oslo"
    later = core.request(core.add_message(first, Message(role="user", content="Something else")), on).session
    assert later.metadata["title"] == "Plan a trip to Oslo"


def test_a_model_written_title_with_title_model():
    seen = []

    class Spy:
        name = "spy"

        def initialize_request(self, native_messages, state):
            seen.append((state["config"].get("model"), native_messages[-1]["content"]))
            return native_messages, state

    Provider = scripted_provider(reply('"Capital of France"'), reply("second"))

    class ModelKey:  # the scripted provider declares no `model`; a feature declaring it stands in for one
        name = "model_key"

        def get_config_schema(self):
            return {"model": {"type": "string", "default": "main"}}

    core = AgentCore(providers=[Provider], features=[TitleFeature, Spy, ModelKey])
    session = core.add_message(core.create_session(), Message(role="user", content="What is the capital of France?"))
    result = core.request(session, {"title_model": "small", "enabled_plugins": ["title"]})
    assert result.session.metadata["title"] == "Capital of France"
    assert [m for m, _ in seen] == ["main", "small"]
    assert "What is the capital of France?" in seen[1][1] and "title" in seen[1][1]
    assert [m.role for m in result.session.messages] == ["user", "assistant"]  # the title request left no trace


def test_a_failing_title_request_falls_back_to_the_first_line():
    class Broken:
        name = "broken"

        def initialize_request(self, native_messages, state):
            if state["config"].get("model") == "small":
                raise RuntimeError("title model is down")
            return native_messages, state

    class ModelKey:
        name = "model_key"

        def get_config_schema(self):
            return {"model": {"type": "string", "default": "main"}}

    core = AgentCore(providers=[scripted_provider("hello")], features=[TitleFeature, Broken, ModelKey])
    session = core.add_message(core.create_session(), Message(role="user", content="Hi there"))
    result = core.request(session, {"title_model": "small", "enabled_plugins": ["title"]})
    assert result.session.metadata["title"] == "Hi there"


def test_the_action_through_the_harness_leaves_a_titled_session_alone():
    from agent_core import Session

    harness = PluginHarness(TitleFeature)
    titled = Session(session_id="s", messages=[Message(role="user", content="x")], metadata={"title": "Kept"})
    assert "session_metadata" not in harness.action("set_title", session=titled)


def test_a_model_written_title_in_an_async_request():
    import asyncio

    class ModelKey:
        name = "model_key"

        def get_config_schema(self):
            return {"model": {"type": "string", "default": "main"}}

    core = AgentCore(providers=[scripted_provider(reply("A title"), reply("x"))], features=[TitleFeature, ModelKey])
    session = core.add_message(core.create_session(), Message(role="user", content="hello there"))
    result = asyncio.run(core.arequest(session, {"title_model": "small", "enabled_plugins": ["title"]}))
    assert result.session.metadata["title"] == "A title"


def test_title_model_runs_with_the_requests_own_key_over_the_wire():
    """The title request reaches the same endpoint with the same API key, which the feature never sees."""
    from agent_core_providers.clients import close_clients
    from agent_core_providers.openai import OpenAIProvider
    from providers._server import ScriptedServer, json_reply
    from providers._wire import oa_text

    seen = []

    class Watch:  # what a feature's context shows of the key
        name = "watch"

        def get_actions(self, state):
            return [{"id": "w", "trigger": "response_finalize"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            seen.append(context["config"]["api_key"])
            return {}

    server = ScriptedServer()
    try:
        server.enqueue(oa_text("Paris."), json_reply({
            "id": "c2", "object": "chat.completion", "created": 1, "model": "small",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Capital of France"},
                         "finish_reason": "stop"}]}))
        core = AgentCore(providers=[OpenAIProvider], features=[TitleFeature, Watch])
        session = core.add_message(core.create_session(), Message(role="user", content="Capital of France?"))
        config = {"base_url": f"{server.url}/v1", "api_key": "sk-title-test-42", "model": "big", "max_retries": 0,
                  "stream": True, "title_model": "small", "enabled_plugins": ["title"]}
        result = core.request(session, config)
    finally:
        server.close()
        close_clients()
    assert result.session.metadata["title"] == "Capital of France"
    main, title = server.requests
    assert main.headers["authorization"] == title.headers["authorization"] == "Bearer sk-title-test-42"
    assert (main.body["model"], title.body["model"]) == ("big", "small")
    assert "tools" not in title.body and title.body.get("stream") is not True
    assert set(seen) == {"<redacted>"}
    assert "sk-title-test-42" not in result.session.to_json().decode()
