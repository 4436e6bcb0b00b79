"""The app needs none of ``agent-core serve``'s uvicorn tuning: its key flows under stock uvicorn and under hypercorn.

Without the tuning's extensions each route takes the plain ASGI way: every body part
through ``send``, and a task waiting on ``receive`` for ``http.disconnect`` to notice a
client that hangs up. Each test runs against both servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import pytest

pytest.importorskip("hypercorn", reason="the test extra installs hypercorn, the second ASGI server")

from agent_core.server import create_app  # noqa: E402
from providers._server import Delay, Reply, ScriptedServer, sse_reply  # noqa: E402
from providers._wire import OA_DONE, oa_chunk  # noqa: E402

from ._live import running, running_hypercorn  # noqa: E402

HI = [{"role": "user", "content": "hi"}]

_SERVERS: dict[str, Callable[[Any], AbstractContextManager[str]]] = {
    "stock uvicorn": lambda app: running(app, header_timeout_s=None),
    "hypercorn": running_hypercorn,
}


@pytest.fixture(params=list(_SERVERS))
def served(request: pytest.FixtureRequest, server: ScriptedServer, store: Any) -> Iterator[tuple[str, Any]]:
    """``(base URL, app)``: the app over the SQLite store, its upstream the scripted ``server``."""
    config = {"base_url": server.url + "/v1", "api_key": "sk-x", "max_retries": 0}
    app = create_app(store=store, config=config)
    with _SERVERS[request.param](app) as url:
        yield url, app


def _until(check: Callable[[], Any], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def _slow() -> Any:
    return sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}), Delay(60),
                     oa_chunk({"content": "lo"}), oa_chunk({}, "stop"), OA_DONE)


def test_a_chat_completion_answers_the_openai_client(served: tuple[str, Any]) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{served[0]}/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hello there"}])
    assert reply.choices[0].message.content == "Echo: hello there"
    assert reply.choices[0].finish_reason == "stop"

    stream = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "one two three"}],
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: one two three"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 4  # word by word
    assert chunks[-1].usage is not None


def test_a_streamed_body_is_whole_on_the_wire(served: tuple[str, Any]) -> None:
    body = {"model": "echo", "messages": HI, "stream": True}
    r = httpx.post(f"{served[0]}/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    frames = [line for line in r.text.splitlines() if line]
    assert frames[-1] == "data: [DONE]" and all(f.startswith("data: ") for f in frames)


def test_a_sessions_turn_is_streamed_and_saved(served: tuple[str, Any]) -> None:
    url = served[0]
    turn = {"message": "hello", "config": {"provider": "echo"}}
    r = httpx.post(f"{url}/v1/sessions/chat-1/turns", json=turn, timeout=30)
    assert r.status_code == 200, r.text
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[0]["type"] == "start" and [e["type"] for e in events[-2:]] == ["done", "saved"]
    saved = httpx.get(f"{url}/v1/sessions/chat-1", timeout=30)
    assert saved.status_code == 200 and saved.headers["etag"] == f'"{events[-1]["revision"]}"'
    assert [m["content"] for m in saved.json()["messages"]] == ["hello", "Echo: hello"]


def test_a_client_that_hangs_up_mid_stream_cancels_its_upstream_request(served: tuple[str, Any],
                                                                        server: ScriptedServer) -> None:
    url, app = served
    server.enqueue(_slow())  # one token, then a minute of silence
    body = {"model": "openai/m", "messages": HI, "stream": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if "Hel" in line:
                break
    left = time.monotonic()
    assert _until(lambda: server.peer_closed)  # not in 60 s: the upstream saw the gateway hang up too
    assert server.peer_closed[-1] - left < 5
    assert _until(lambda: app.running == 0), app.running  # and the request is over


def test_a_client_that_hangs_up_before_the_answer_cancels_its_upstream_request(served: tuple[str, Any],
                                                                              server: ScriptedServer) -> None:
    server.enqueue(Reply(stall=60))
    body = {"model": "openai/m", "messages": HI}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{served[0]}/v1/chat/completions", json=body, timeout=1)
    assert _until(lambda: server.peer_closed)
    assert _until(lambda: served[1].running == 0), served[1].running
