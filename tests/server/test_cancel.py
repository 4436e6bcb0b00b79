"""Cancelling: ``DELETE /v1/requests/{id}`` and a client that hangs up both stop the upstream request.

The scripted upstream sends one chunk, then would stall for 60 s; each test asserts the request
ends well before that (a generous bound: the behaviour under test is the deadline).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_core.server import create_app
from providers._server import Delay, Reply, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running

HI = [{"role": "user", "content": "hi"}]


def _slow() -> Any:
    return sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}), Delay(60),
                     oa_chunk({"content": "lo"}), oa_chunk({}, "stop"), OA_DONE)


@pytest.fixture
def upstream(server: ScriptedServer) -> ScriptedServer:
    """The model API the facade talks to: the shared loopback ``server`` fixture."""
    return server


@pytest.fixture
def facade(upstream: ScriptedServer, store: Any) -> Iterator[str]:
    config = {"base_url": upstream.url + "/v1", "api_key": "sk-x", "max_retries": 0}
    with running(create_app(store=store, config=config)) as url:
        yield url


def _until(check: Any, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_delete_cancels_a_streaming_completion(facade: str, upstream: Any) -> None:
    upstream.enqueue(_slow())
    started = time.monotonic()
    body = {"model": "openai/m", "messages": HI, "stream": True}
    with httpx.stream("POST", f"{facade}/v1/chat/completions", json=body, timeout=30) as r:
        rid = r.headers["x-request-id"]
        lines = r.iter_lines()
        seen = []
        for line in lines:
            seen.append(line)
            if '"Hel"' in line:
                break
        assert httpx.delete(f"{facade}/v1/requests/{rid}").status_code == 204
        rest = [line for line in lines if line.startswith("data: ")]
    assert time.monotonic() - started < 20
    assert rest[-1] == "data: [DONE]"
    assert json.loads(rest[-2][6:])["error"]["code"] == "request_cancelled"
    assert httpx.delete(f"{facade}/v1/requests/{rid}").status_code == 404


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_a_client_that_hangs_up_before_the_answer_cancels_its_upstream_request(
    facade: str, upstream: Any, stream: bool
) -> None:
    upstream.enqueue(Reply(stall=60))  # the upstream says nothing for a minute, and notes when we hang up
    body = {"model": "openai/m", "messages": HI, "stream": stream}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{facade}/v1/chat/completions", json=body, timeout=1)
    assert _until(lambda: upstream.peer_closed)


_FACADE_BODIES = {
    "/v1/chat/completions": {"model": "openai/m", "messages": HI, "stream": True},
    "/v1/messages": {"model": "openai/m", "messages": HI, "max_tokens": 50, "stream": True},
    "/v1/responses": {"model": "openai/m", "input": "hi", "stream": True},
}


@pytest.mark.parametrize("path", list(_FACADE_BODIES))
def test_a_client_that_hangs_up_mid_stream_cancels_its_upstream_request(facade: str, upstream: Any,
                                                                        path: str) -> None:
    """After the first token, with the upstream stalled for a minute: the upstream sees us hang up at once."""
    upstream.enqueue(_slow())
    closed_before = len(upstream.peer_closed)
    with httpx.stream("POST", f"{facade}{path}", json=_FACADE_BODIES[path], timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if "Hel" in line:
                break
    left = time.monotonic()
    assert _until(lambda: len(upstream.peer_closed) > closed_before)
    assert upstream.peer_closed[-1] - left < 5


def test_a_client_that_hangs_up_mid_turn_cancels_it(facade: str, upstream: Any) -> None:
    upstream.enqueue(_slow())
    body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
    with httpx.stream("POST", f"{facade}/v1/sessions/gone/turns", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if '"partial"' in line:
                break
    # Hung up mid-answer: the request stops now (not in 60 s), as a cancelled turn, which the store keeps.
    assert _until(lambda: httpx.get(f"{facade}/v1/sessions/gone").status_code == 200)


def test_a_hung_up_turn_leaves_no_response_waiting(upstream: Any, store: Any) -> None:
    """Once the client of a sessions turn is gone, its response ends too, not when the server stops."""
    upstream.enqueue(_slow())
    app = create_app(store=store, config={"base_url": upstream.url + "/v1", "api_key": "sk-x", "max_retries": 0})
    with running(app) as url:
        body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
        with httpx.stream("POST", f"{url}/v1/sessions/left/turns", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if '"partial"' in line:
                    break
        assert _until(lambda: app.running == 0, 5), app.running  # the request in flight is over


def test_delete_cancels_a_non_streaming_completion_named_by_the_client(facade: str, upstream: Any) -> None:
    import threading

    upstream.enqueue(_slow())
    answers: list[httpx.Response] = []
    body = {"model": "openai/m", "messages": HI}
    t = threading.Thread(target=lambda: answers.append(httpx.post(
        f"{facade}/v1/chat/completions", json=body, headers={"x-request-id": "mine-1"}, timeout=30)))
    t.start()
    assert _until(lambda: upstream.requests)  # the upstream call is under way
    assert httpx.delete(f"{facade}/v1/requests/mine-1").status_code == 204
    t.join(timeout=20)
    assert answers[0].status_code == 499
    assert answers[0].json()["error"]["agent_core_type"] == "ProviderRequestCancelled"
    assert httpx.delete(f"{facade}/v1/requests/mine-1").status_code == 404


def test_a_request_id_already_running_is_409(facade: str, upstream: Any) -> None:
    import threading

    upstream.enqueue(_slow())
    body = {"model": "openai/m", "messages": HI}
    t = threading.Thread(target=lambda: httpx.post(
        f"{facade}/v1/chat/completions", json=body, headers={"x-request-id": "dup"}, timeout=30))
    t.start()
    assert _until(lambda: upstream.requests)
    r = httpx.post(f"{facade}/v1/chat/completions", json=body, headers={"x-request-id": "dup"})
    assert r.status_code == 409 and "dup" in r.json()["error"]["message"]
    httpx.delete(f"{facade}/v1/requests/dup")
    t.join(timeout=20)


def test_delete_cancels_a_session_turn(facade: str, upstream: Any) -> None:
    upstream.enqueue(_slow())
    body = {"message": "hi", "config": {"provider": "openai", "model": "m"}}
    started = time.monotonic()
    with httpx.stream("POST", f"{facade}/v1/sessions/t/turns", json=body, timeout=30) as r:
        lines = r.iter_lines()
        rid = None
        for line in lines:
            if line.startswith("data: "):
                event = json.loads(line[6:])
                rid = rid or (event["request_id"] if event["type"] == "start" else None)
                if event["type"] == "partial":
                    break
        assert rid and httpx.delete(f"{facade}/v1/requests/{rid}").status_code == 204
        rest = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert time.monotonic() - started < 20
    done = [e for e in rest if e["type"] == "done"]
    assert done[-1]["outcome"] == {"status": "stopped", "reason": "cancelled", "detail": done[-1]["outcome"]["detail"]}
    # A cancelled turn is a stopped request, and the store keeps those (docs/store.md): the question stays.
    assert rest[-1]["type"] == "saved"
    stored = httpx.get(f"{facade}/v1/sessions/t").json()
    assert stored["messages"][0] == {**stored["messages"][0], "role": "user", "content": "hi"}
