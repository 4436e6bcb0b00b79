"""``context["core"]`` is a narrow face of the engine (``PluginCore``), and ``side_request`` borrows the
in-flight request's config, secrets included, without the plugin ever holding them."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.errors import AgentCoreError, ConfigError, InvalidArgumentError
from agent_core.plugins.core import PluginCore, side_config
from agent_core.testing import reply, scripted_provider


class KeyedProvider:
    """A provider that declares a secret and reports what each call was configured with."""

    name = "keyed"
    calls: list[dict[str, Any]] = []

    def get_config_schema(self):
        return {"api_key": {"type": "string", "default": ""}, "model": {"type": "string", "default": "main"},
                "base_url": {"type": "string", "default": "http://127.0.0.1:9"}}

    def init(self, config):
        return {"config": dict(config)}

    def call_api(self, native_messages, state):
        cfg = state["config"]
        KeyedProvider.calls.append({"model": cfg["model"], "key": cfg["api_key"], "url": cfg["base_url"]})
        return [], [{"role": "assistant", "content": f"answer from {cfg['model']}"}], native_messages, state


def _asker(overrides: Any, out: list[Any]) -> type:
    class Asker:
        name = "asker"

        def get_actions(self, state):
            return [{"id": "ask", "trigger": "response_finalize"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            core = context["core"]
            out.append(("config", context["config"].get("api_key")))
            if len(out) > 1:  # once per request
                return {}
            try:
                result = core.side_request(core.create_session("side", {}), overrides)
                out.append(("answer", result.final_messages[-1].content, result.request_id))
            except AgentCoreError as exc:
                out.append(("error", exc))
            return {}

    return Asker


def _run(overrides: Any) -> list[Any]:
    KeyedProvider.calls = []
    out: list[Any] = []
    core = AgentCore(providers=[KeyedProvider], features=[_asker(overrides, out)])
    core.request(Session("s", [Message("user", "hi")]), {"api_key": "sk-secret-123", "model": "main"},
                 request_id="main-req")
    return out


def test_a_side_request_runs_with_the_in_flight_secret_the_plugin_never_sees() -> None:
    out = _run({"model": "small", "disabled_plugins": ["asker"]})
    assert out[0] == ("config", "<redacted>")  # the plugin's view of the key
    kind, answer, rid = out[1]
    assert answer == "answer from small" and rid.startswith("main-req/side-")
    assert KeyedProvider.calls == [{"model": "main", "key": "sk-secret-123", "url": "http://127.0.0.1:9"},
                                   {"model": "small", "key": "sk-secret-123", "url": "http://127.0.0.1:9"}]


@pytest.mark.parametrize("key", ["provider", "base_url", "api_key", "openai_api_key", "client_secret"])
def test_overrides_may_not_redirect_the_credentials(key: str) -> None:
    out = _run({key: "http://evil.example" if key == "base_url" else "x"})
    kind, exc = out[1]
    assert kind == "error" and isinstance(exc, ConfigError) and exc.key == key
    assert "sk-secret-123" not in str(exc) and "evil" not in str(exc)
    assert len(KeyedProvider.calls) == 1  # nothing was sent


def test_a_schema_declared_secret_is_refused_too() -> None:
    with pytest.raises(ConfigError) as err:
        side_config({"a": 1}, {"vault_ref": "x"}, {"vault_ref"})
    assert err.value.key == "vault_ref"
    with pytest.raises(ConfigError):
        side_config({"a": 1}, ["model"], ())  # type: ignore[arg-type]
    assert side_config({"a": 1, "model": "m"}, {"model": "n"}, ()) == {"a": 1, "model": "n"}


def test_side_request_needs_a_request_in_flight() -> None:
    core = AgentCore(providers=[scripted_provider(reply("x"))])
    with pytest.raises(InvalidArgumentError) as err:
        core.side_request("nope", Session("s"), {})
    assert err.value.argument == "request_id"
    with pytest.raises(InvalidArgumentError):
        PluginCore(core).side_request(Session("s"))  # neither a request nor an execute_action config


def test_the_face_exposes_sessions_and_side_requests_only() -> None:
    face = PluginCore(AgentCore(providers=[scripted_provider("x")]), "r")
    public = {n for n in dir(face) if not n.startswith("_")}
    assert public == {"add_message", "aside_request", "create_session", "request_id", "side_request",
                      "slice_session"}
    s = face.add_message(face.create_session("t"), "user", "a")
    assert face.slice_session(s, 0, 1, session_id="u").messages[0].content == "a"


def test_cancelling_a_request_cancels_its_side_requests() -> None:
    import threading

    started, release = threading.Event(), threading.Event()
    cancelled: list[str] = []

    class Slow:
        name = "slow"

        def init(self, config):
            return {"config": dict(config)}

        def call_api(self, native_messages, state, *, request_id=None):
            if "/side-" in (request_id or ""):
                started.set()
                release.wait(10)
            return [], [{"role": "assistant", "content": "x"}], native_messages, state

        def cancel_request(self, request_id):
            cancelled.append(request_id)
            release.set()

    out: list[Any] = []
    core = AgentCore(providers=[Slow], features=[_asker({"disabled_plugins": ["asker"]}, out)])
    ended: list[Any] = []

    def run() -> None:
        try:
            core.request(Session("s", [Message("user", "hi")]), {}, request_id="parent")
        except AgentCoreError as exc:
            ended.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(10)
    assert core.cancel_request("parent") is True
    worker.join(10)
    assert not worker.is_alive()  # the side request did not hold the parent up
    assert [c for c in cancelled if c.startswith("parent/side-")]  # the side request was reached too
    assert core.cancel_request("parent") is False  # nothing left in flight


def test_an_async_tool_asks_the_model_on_the_side_with_aside_request() -> None:
    import asyncio

    from agent_core.testing import tool_call

    class Helper:
        name = "helper"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "second_opinion", "parameters": {"type": "object"}}}]

        async def execute_tool_async(self, tool_name, payload, state, *, context=None):
            core = context["core"]
            result = await core.aside_request(core.create_session("side"), {"model": "small"})
            return {"success": True, "result": result.final_messages[-1].content}

    class Provider(KeyedProvider):
        name = "keyed"

        def call_api(self, native_messages, state):
            cfg = state["config"]
            KeyedProvider.calls.append({"model": cfg["model"], "key": cfg["api_key"], "url": cfg["base_url"]})
            if cfg["model"] == "small":
                return [], [{"role": "assistant", "content": "from small"}], native_messages, state
            if any(m.get("role") == "tool" for m in native_messages):
                return [], [{"role": "assistant", "content": "done"}], native_messages, state
            ask = {"role": "assistant", "content": "", "tool_calls": [tool_call("second_opinion", {}, id="h")]}
            return [], [ask], native_messages, state

        def from_native_messages(self, native_messages, state):
            return [{"role": m["role"], "content": m["content"],
                     "metadata": {"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}}
                    for m in native_messages]

    KeyedProvider.calls = []
    core = AgentCore(providers=[Provider], tools=[Helper])
    result = asyncio.run(core.arequest(Session("s", [Message("user", "hi")]), {"api_key": "sk-async-9"}))
    tool = next(m for m in result.session.messages if m.role == "tool")
    assert tool.content == "Result: from small"
    assert [c["model"] for c in KeyedProvider.calls] == ["main", "small", "main"]
    assert {c["key"] for c in KeyedProvider.calls} == {"sk-async-9"}
