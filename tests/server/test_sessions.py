"""The sessions API over a real SQLite store: turns streamed as SSE, saved with revisions, If-Match, 409."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from agent_core import decode_event


def _events(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]


def _turn(url: str, sid: str, message: Any, **kw: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/sessions/{sid}/turns", json={"message": message, "config": {"provider": "echo"}},
                      timeout=30, **kw)


def test_create_turn_read_list_delete(base_url: str) -> None:
    r = httpx.post(f"{base_url}/v1/sessions", json={"id": "chat-1", "metadata": {"user": "ann"}})
    assert r.status_code == 201 and r.json() == {"id": "chat-1", "revision": 1} and r.headers["etag"] == '"1"'

    events = _events(_turn(base_url, "chat-1", "hello"))
    types = [e["type"] for e in events]
    assert types[0] == "start" and "partial" in types
    assert types[-2:] == ["done", "saved"]
    assert events[-1]["revision"] == 2 and events[-1]["session_id"] == "chat-1"
    for e in events[:-1]:  # the engine's events, as schemas/event.schema.json describes them
        assert decode_event(json.dumps(e)).type == e["type"]

    r = httpx.get(f"{base_url}/v1/sessions/chat-1")
    assert r.status_code == 200 and r.headers["etag"] == '"2"'
    body = r.json()
    assert body["revision"] == 2 and body["metadata"] == {"user": "ann"}
    assert [(m["role"], m["content"]) for m in body["messages"]] == [("user", "hello"), ("assistant", "Echo: hello")]

    listed = httpx.get(f"{base_url}/v1/sessions").json()["data"]
    assert [(s["id"], s["revision"], s["message_count"]) for s in listed] == [("chat-1", 2, 2)]

    assert httpx.delete(f"{base_url}/v1/sessions/chat-1").status_code == 204
    r = httpx.get(f"{base_url}/v1/sessions/chat-1")
    assert r.status_code == 404 and r.json()["error"]["type"] == "SessionNotFoundError"
    assert "chat-1" in r.json()["error"]["message"]


def test_a_turn_on_a_new_id_creates_the_session(base_url: str) -> None:
    assert _events(_turn(base_url, "fresh", {"role": "user", "content": "hi"}))[-1]["revision"] == 1
    assert httpx.get(f"{base_url}/v1/sessions/fresh").json()["messages"][-1]["content"] == "Echo: hi"


def test_if_match_saves_at_that_revision_or_answers_409_with_the_current_one(base_url: str) -> None:
    httpx.post(f"{base_url}/v1/sessions", json={"id": "s"})
    assert _events(_turn(base_url, "s", "one", headers={"if-match": '"1"'}))[-1]["revision"] == 2
    r = _turn(base_url, "s", "two", headers={"if-match": "1"})
    assert r.status_code == 409
    assert r.json()["error"]["type"] == "ConflictError" and r.json()["error"]["current_revision"] == 2
    assert r.headers["etag"] == '"2"'
    assert len(httpx.get(f"{base_url}/v1/sessions/s").json()["messages"]) == 2  # the stale turn wrote nothing
    r = _turn(base_url, "s", "x", headers={"if-match": "soon"})
    assert r.status_code == 400 and "If-Match" in r.json()["error"]["message"]
    r = _turn(base_url, "nosuch", "x", headers={"if-match": "1"})
    assert r.status_code == 404


def test_delete_with_a_stale_if_match_is_409_and_keeps_the_session(base_url: str) -> None:
    httpx.post(f"{base_url}/v1/sessions", json={"id": "d"})
    _turn(base_url, "d", "one")
    r = httpx.delete(f"{base_url}/v1/sessions/d", headers={"if-match": "1"})
    assert r.status_code == 409 and r.json()["error"]["current_revision"] == 2
    assert httpx.delete(f"{base_url}/v1/sessions/d", headers={"if-match": "2"}).status_code == 204
    assert httpx.delete(f"{base_url}/v1/sessions/d").status_code == 404


def test_creating_an_existing_id_is_409(base_url: str) -> None:
    assert httpx.post(f"{base_url}/v1/sessions", json={"id": "twice"}).status_code == 201
    r = httpx.post(f"{base_url}/v1/sessions", json={"id": "twice"})
    assert r.status_code == 409 and r.json()["error"]["current_revision"] == 1


@pytest.mark.parametrize(("body", "words"), [
    ({}, ("missing required field `message`",)),
    ({"message": 5}, ("$.message",)),
    ({"message": {"role": "robot", "content": "x"}}, ("message",)),
    ({"message": "hi", "config": []}, ("$.config",)),
    ({"message": "hi", "confg": {}}, ("unknown field `confg`",)),
])
def test_bad_turn_bodies_are_400(base_url: str, body: Any, words: tuple[str, ...]) -> None:
    r = httpx.post(f"{base_url}/v1/sessions/s/turns", json=body)
    assert r.status_code == 400, r.text
    for word in words:
        assert word in r.json()["error"]["message"]


def test_a_turn_with_a_bad_config_is_a_4xx_and_saves_nothing(base_url: str) -> None:
    r = httpx.post(f"{base_url}/v1/sessions/c/turns", json={"message": "hi", "config": {"provider": "nosuch"}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "ConfigError" and "nosuch" in r.json()["error"]["message"]
    assert httpx.get(f"{base_url}/v1/sessions/c").status_code == 404


def test_bad_list_limit_is_400(base_url: str) -> None:
    r = httpx.get(f"{base_url}/v1/sessions?limit=0")
    assert r.status_code == 400 and "limit" in r.json()["error"]["message"]


def test_concurrent_turns_on_one_session_lose_none(base_url: str) -> None:
    httpx.post(f"{base_url}/v1/sessions", json={"id": "busy"})
    results: list[list[dict[str, Any]]] = []

    def one(i: int) -> None:
        results.append(_events(_turn(base_url, "busy", f"msg {i}")))

    # Each race has a winner, so with retries=3 (the default) four writers always all land.
    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(events[-1]["revision"] for events in results) == [2, 3, 4, 5]
    messages = httpx.get(f"{base_url}/v1/sessions/busy").json()["messages"]
    assert sorted(m["content"] for m in messages if m["role"] == "user") == [f"msg {i}" for i in range(4)]
    # each reply right after its own question
    for q, a in zip(messages[::2], messages[1::2]):
        assert a["content"] == f"Echo: {q['content']}"
