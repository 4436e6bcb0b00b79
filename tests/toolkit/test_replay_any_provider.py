"""Record and replay work for any provider that takes injected httpx clients, not only the bundled ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core import AgentCore
from agent_core.errors import ConfigError
from agent_core.testing import recording_provider, replay_provider


class JsonLines:
    """A third-party provider for an API that streams one JSON object per line: ``{"text": ...}``, ``{"done": true}``."""

    name = "jsonlines"
    _client: httpx.Client | None = None

    @classmethod
    def using(cls, client: httpx.Client | None = None, async_client: Any = None) -> type:
        """The convention replay and record rely on: this class, sending through the given client."""
        return type(cls.__name__, (cls,), {"_client": client})

    def init(self, config: Any) -> Any:
        return {"url": config.get("base_url", "https://jsonlines.invalid") + "/generate"}

    def to_native_messages(self, messages: Any, state: Any, context: Any = None) -> Any:
        return [{"role": m["role"], "text": m["content"]} for m in messages]

    def stream_api(self, native: Any, state: Any, request_id: Any = None) -> Any:
        client = self._client or httpx.Client()
        with client.stream("POST", state["url"], json={"messages": list(native)}) as response:
            for line in response.iter_lines():
                if line.strip():
                    yield json.loads(line)

    def process_chunk(self, chunk: Any, native: Any, state: Any) -> Any:
        if "text" in chunk:
            return [{"role": "assistant", "content": chunk["text"]}], [], native, {
                **state, "answer": state.get("answer", "") + chunk["text"]}
        return [], [], native, state

    def finalize(self, native: Any, state: Any, context: Any = None) -> Any:
        final = {"role": "assistant", "text": state.get("answer", "")}
        return [final], [*native, final], state

    def from_native_messages(self, native: Any, state: Any, context: Any = None) -> Any:
        return [{"role": n["role"], "content": n["text"]} for n in native]


def test_a_third_party_provider_is_recorded_and_replayed(server: Any, tmp_path: Path) -> None:
    from providers._server import Reply

    body = b'{"text": "Hel"}\n{"text": "lo"}\n{"done": true}\n'
    server.enqueue(Reply(200, {"content-type": "application/x-ndjson"}, [body]))
    recorded = tmp_path / "answer.jsonl"
    core = AgentCore(providers=[recording_provider(JsonLines, recorded)])
    session = core.add_message(core.create_session(), "user", "hi")
    live = core.request(session, {"provider": "jsonlines", "base_url": server.url})
    assert live.session.messages[-1].content == "Hello"
    assert recorded.read_bytes() == body  # byte for byte what the server sent

    replayed = AgentCore(providers=[replay_provider(recorded, JsonLines)])
    again = replayed.request(session, {"provider": "jsonlines"})
    assert again.session.messages[-1].content == "Hello" and len(server.requests) == 1  # nothing sent


def test_a_provider_without_the_convention_is_named() -> None:
    class Plain:
        name = "plain"

        def stream_api(self, native: Any, state: Any) -> Any:
            yield from ()

    with pytest.raises(ConfigError, match="injected httpx clients.*'plain' has none"):
        replay_provider("unused.txt", Plain)
    with pytest.raises(ConfigError, match="no provider named 'nope'"):
        replay_provider("unused.txt", "nope")


def test_json_lines_asked_for_without_streaming_get_the_replay_hint(tmp_path: Path) -> None:
    class Asking(JsonLines):
        def call_api(self, native: Any, state: Any, request_id: Any = None) -> Any:
            response = (self._client or httpx.Client()).post(state["url"], json={"messages": list(native),
                                                                                 "stream": False})
            return [], [], native, {**state, "said": (response.status_code, response.json())}

        def finalize(self, native: Any, state: Any, context: Any = None) -> Any:
            final = {"role": "assistant", "text": json.dumps(state.get("said"))}
            return [final], [*native, final], state

    recorded = tmp_path / "answer.jsonl"
    recorded.write_text('{"text": "Hel"}\n{"text": "lo"}\n{"done": true}\n')
    core = AgentCore(providers=[replay_provider(recorded, Asking)])
    result = core.request(core.add_message(core.create_session(), "user", "hi"), {"provider": "jsonlines",
                                                                                   "stream": False})
    status, body = json.loads(result.session.messages[-1].content)
    assert status == 400 and "holds a streamed body; replay it with a streaming request" in body["error"]["message"]
