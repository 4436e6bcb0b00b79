"""Values a client sends by paths other than ``config``, attacked: stored plugin lists, amplified bodies, digits.

A session's ``metadata["plugins"]`` is a plugin list the engine obeys (the original platform's
rule). Stored through ``POST /v1/sessions`` it would let a client switch on ``file_mentions`` or
the ``files`` tool and switch off what the operator forced (``redact``, ``system_prompt``). These
tests store such lists both ways (through the API, which refuses them, and straight into the
store, as an older server or the operator's CLI could have left them) and check that every route
runs with the operator's plugins.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from agent_core import Message, Session
from agent_core.plugin_kit import Feature
from agent_core.server import ServeSettings, create_app
from providers._server import ScriptedServer, json_reply

from ._live import running, start_serve, stop_serve

SECRET = "the-contents-of-secret-dot-txt"


def _chat_reply(text: str) -> Any:
    return json_reply({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


@pytest.fixture
def upstream() -> Any:
    srv = ScriptedServer()
    yield srv
    srv.close()


@pytest.fixture
def secret_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's working directory, holding a file no client should ever see."""
    (tmp_path / "secret.txt").write_text(SECRET)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _operator(upstream: ScriptedServer) -> dict[str, Any]:
    return {"provider": "openai", "model": "m", "base_url": f"{upstream.url}/v1", "api_key": "sk-op-0123456789",
            "max_retries": 0, "system_prompt": "OPERATOR-PROMPT", "stream": False}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_client_cannot_store_a_plugin_list_or_an_engine_record(backend: str, request: Any, tmp_path: Path) -> None:
    store = _store(backend, request, tmp_path)
    with running(create_app(store=store)) as url:
        for metadata, param, status in (({"plugins": ["file_mentions"]}, "metadata.plugins", 403),
                                        ({"agent_core.native_history": {}}, "metadata.agent_core.native_history",
                                         400)):
            r = httpx.post(f"{url}/v1/sessions", json={"id": "s1", "metadata": metadata})
            assert r.status_code == status and r.json()["error"]["param"] == param, r.text
        assert "--allow-config enabled_plugins" in httpx.post(
            f"{url}/v1/sessions", json={"metadata": {"plugins": []}}).json()["error"]["message"]
        assert store.list() == []
    allowed = ServeSettings(allow_config=("enabled_plugins",))
    with running(create_app(store=store, settings=allowed)) as url:
        r = httpx.post(f"{url}/v1/sessions", json={"id": "s2", "metadata": {"plugins": ["timestamps"]}})
        assert r.status_code == 201, r.text


def _store(backend: str, request: Any, tmp_path: Path) -> Any:
    from agent_core.store import open_store

    if backend == "sqlite":
        return open_store(f"sqlite:///{tmp_path / 'gate.db'}")
    from .conftest import pg_schema_url

    return open_store(pg_schema_url(request.getfixturevalue("pg")))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_stored_plugin_list_switches_nothing_on_or_off_on_any_route(
        backend: str, request: Any, tmp_path: Path, upstream: ScriptedServer, secret_dir: Path) -> None:
    """The attack: a list naming only ``file_mentions`` (on) and leaving out ``system_prompt`` (forced on)."""
    store = _store(backend, request, tmp_path)
    hostile = {"plugins": ["file_mentions", "files"]}
    store.create(Session("victim", [], hostile))
    calls = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "secret.txt"}'}}
    store.create(Session("tooled", [Message("user", "go"), Message("assistant", "", {"tool_calls": [calls]})], hostile))
    for _ in range(5):
        upstream.enqueue(_chat_reply("ok"))
    with running(create_app(store=store, config=_operator(upstream))) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        client.chat.completions.create(model="openai/m", messages=[{"role": "user", "content": "see @secret.txt"}],
                                       extra_headers={"X-Session-Id": "victim"})
        r = httpx.post(f"{url}/v1/sessions/victim/turns", json={"message": "see @secret.txt"}, timeout=30)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{url}/v1/sessions/tooled/turns", json={"message": "and now?"}, timeout=30)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{url}/v1/messages", json={"model": "openai/m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "see @secret.txt"}]}, headers={"X-Session-Id": "victim"}, timeout=30)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{url}/v1/responses", json={"model": "openai/m", "input": "see @secret.txt"},
                       headers={"X-Session-Id": "victim"}, timeout=30)
        assert r.status_code == 200, r.text
    assert len(upstream.requests) == 5
    for seen in upstream.requests:
        raw = seen.raw.decode()
        assert SECRET not in raw  # file_mentions never ran, nor did the files tool
        assert "OPERATOR-PROMPT" in raw  # the operator's system_prompt stayed on
        assert '"read_file"' not in raw.split('"tools"')[-1] if '"tools"' in raw else True


def test_a_tenant_allowed_to_opt_in_gets_its_list_added_never_the_operators_plugins_removed(
        store: Any, upstream: ScriptedServer) -> None:
    store.create(Session("mine", [], {"plugins": ["timestamps"]}))
    upstream.enqueue(_chat_reply("ok"))
    settings = ServeSettings(allow_config=("enabled_plugins",))
    with running(create_app(store=store, config=_operator(upstream), settings=settings)) as url:
        r = httpx.post(f"{url}/v1/sessions/mine/turns", json={"message": "hi"}, timeout=30)
        assert r.status_code == 200, r.text
        stored = httpx.get(f"{url}/v1/sessions/mine").json()
    assert "OPERATOR-PROMPT" in upstream.requests[0].raw.decode()  # not in the list, still on
    assert "timestamp" in stored["messages"][-1]["metadata"]  # in the list: opted in


# -- what a request becomes ---------------------------------------------------------------------


def _amplified(kind: str) -> tuple[str, dict[str, Any]]:
    many = 100_000
    if kind == "messages":
        blocks = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"} for i in range(many)]
        return "/v1/messages", {"model": "echo", "max_tokens": 10, "messages": [{"role": "user", "content": blocks}]}
    if kind == "chat":
        calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                 for i in range(20_000)]
        return "/v1/chat/completions", {"model": "echo", "messages": [{"role": "user", "content": "hi"},
                                                                      {"role": "assistant", "tool_calls": calls}]}
    parts = [{"type": "input_text", "text": "x"} for _ in range(many)]
    return "/v1/responses", {"model": "echo", "input": [{"role": "user", "content": parts}]}


@pytest.mark.slow  # starts agent-core serve as a process: the tier `pytest -m slow`
@pytest.mark.parametrize("kind", ["messages", "chat", "responses"])
def test_an_amplified_body_is_refused_naming_the_amount_and_healthz_keeps_answering(
        kind: str, tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path)
    try:
        path, body = _amplified(kind)
        raw = json.dumps(body).encode()  # encoded before the probe starts: it holds this process's GIL

        def probed(work: Any) -> list[float]:
            """``/healthz`` asked over and over from a second client while ``work`` runs; each answer's wait."""
            waits: list[float] = []
            done, ready = threading.Event(), threading.Event()

            def probe() -> None:
                with httpx.Client() as c:
                    c.get(f"{url}/healthz", timeout=10)  # connected before the work starts
                    ready.set()
                    while not done.is_set():
                        began = time.perf_counter()
                        assert c.get(f"{url}/healthz", timeout=10).status_code == 200
                        waits.append(time.perf_counter() - began)
                        time.sleep(0.005)

            prober = threading.Thread(target=probe)
            prober.start()
            ready.wait(10)
            try:
                work()
            finally:
                done.set()
                prober.join()
            return waits

        answers: list[httpx.Response] = []
        during = probed(lambda: answers.append(httpx.post(f"{url}{path}", content=raw, timeout=60,
                                                          headers={"content-type": "application/json"})))
        # the same probe with nothing else to do: what this machine's own load adds to any answer
        control = probed(lambda: time.sleep(0.3))
        (r,) = answers
        assert r.status_code == 400, r.text[:300]
        assert any(name in r.text for name in ("max_messages", "max_blocks", "max_tool_calls")), r.text[:300]
        # at least the probe sent as the body went out: a refusal that quick is the point
        assert during and max(during) < 0.1 + max(control), (sorted(during)[-3:], sorted(control)[-3:])
    finally:
        stop_serve(proc)


def test_the_limits_count_what_each_facade_body_becomes() -> None:
    from agent_core.server.facades.chat.facade import chat_amounts
    from agent_core.server.facades.messages.facade import messages_amounts
    from agent_core.server.facades.responses.facade import responses_amounts
    from agent_core.server.facades.messages.dialect import AnthropicBody
    from agent_core.server.facades.chat.body import ChatBody
    from agent_core.server.facades.responses.dialect import ResponsesBody
    import msgspec

    anthropic = msgspec.convert({"model": "m", "max_tokens": 1, "system": [{"type": "text", "text": "s"}], "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "x"}]},
                                     {"type": "text", "text": "y"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}]}]}, AnthropicBody)
    got = messages_amounts(anthropic)
    assert (got.messages, got.blocks, got.tool_calls, got.tool_results) == (4, 5, 1, 1)
    chat = msgspec.convert({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f"}}, {"id": "2", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "r"}]}, ChatBody)
    got = chat_amounts(chat.messages)
    assert (got.messages, got.blocks, got.tool_calls, got.tool_results) == (3, 2, 2, 1)
    responses = msgspec.convert({"model": "m", "instructions": "i", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "a"}]},
        {"type": "function_call", "call_id": "1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "1", "output": "r"}]}, ResponsesBody)
    got = responses_amounts(responses)
    assert (got.messages, got.blocks, got.tool_calls, got.tool_results) == (4, 1, 1, 1)


# -- integers, caps and the operator's system prompt ---------------------------------------------


@pytest.mark.parametrize("digits", ["²", "٣", "１", "3\u0660", "-1", "+1", "1 1"])
def test_integers_from_clients_take_ascii_digits_only(base_url: str, digits: str) -> None:
    r = httpx.get(f"{base_url}/v1/sessions", params={"limit": digits})
    assert r.status_code == 400 and r.json()["error"]["param"] == "limit", r.text
    httpx.post(f"{base_url}/v1/sessions", json={"id": "d"})
    r = httpx.delete(f"{base_url}/v1/sessions/d", headers={b"If-Match": digits.encode()})
    assert r.status_code == 400 and r.json()["error"]["param"] == "If-Match", r.text


def test_an_operators_max_tokens_is_a_ceiling_and_its_system_prompt_stays_first(
        store: Any, upstream: ScriptedServer) -> None:
    upstream.enqueue(_chat_reply("ok"), _chat_reply("ok"))
    operator = {**_operator(upstream), "max_tokens": 100}
    with running(create_app(store=store, config=operator)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        client.chat.completions.create(model="openai/m", max_tokens=5000, messages=[
            {"role": "system", "content": "CLIENT-PROMPT"}, {"role": "user", "content": "hi"}])
        client.chat.completions.create(model="openai/m", max_completion_tokens=5000, max_tokens=20,
                                       messages=[{"role": "user", "content": "hi"}])
    first, second = (r.body for r in upstream.requests)
    assert first["max_tokens"] == 100
    assert [m["content"] for m in first["messages"] if m["role"] == "system"] == ["OPERATOR-PROMPT", "CLIENT-PROMPT"]
    assert second.get("max_completion_tokens", 100) <= 100 and second.get("max_tokens", 20) <= 100


def test_an_operator_can_refuse_a_clients_system_message(store: Any, upstream: ScriptedServer) -> None:
    operator = {**_operator(upstream), "system_prompt_policy": "refuse"}
    with running(create_app(store=store, config=operator)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="openai/m", messages=[
                {"role": "system", "content": "CLIENT-PROMPT"}, {"role": "user", "content": "hi"}])
        assert "system_prompt_policy" in str(refused.value)
    assert upstream.requests == []


# -- session actions ------------------------------------------------------------------------------


class AskModel(Feature):
    """A feature whose action asks the model (a paid side request), after waiting ``wait_s``."""

    name = "ask_model"
    version = "1.0.0"
    priority = 50
    actions = ({"id": "ask_model", "label": "Ask the model", "inputs": {"wait_s": {"type": "number", "default": 0}}},)

    def execute_action(self, action_id: str, session: Any, native: Any, params: Any, context: Any,
                       state: Any = None) -> dict[str, Any]:
        time.sleep(float(params.get("wait_s") or 0))
        asked = context["core"].add_message(context["core"].create_session(), "user", "summarize")
        result = context["core"].side_request(asked, {"max_iterations": 1, "stream": False})
        return {"session_metadata": {"summary": result.final_messages[-1].content}}


def _action_app(store: Any, upstream: ScriptedServer, **settings: Any) -> Any:
    from agent_core import AgentCore
    from agent_core_providers.echo import EchoProvider
    from agent_core_providers.openai import OpenAIProvider

    core = AgentCore(providers=[OpenAIProvider, EchoProvider], features=[AskModel])
    operator = {k: v for k, v in _operator(upstream).items() if k != "system_prompt"}
    return create_app(core=core, store=store, config=operator, settings=ServeSettings(**settings))


def test_an_action_that_asks_the_model_needs_the_operators_paid_actions(store: Any, upstream: ScriptedServer) -> None:
    upstream.enqueue(_chat_reply("a summary"))
    with running(_action_app(store, upstream)) as url:
        httpx.post(f"{url}/v1/sessions", json={"id": "s"})
        r = httpx.post(f"{url}/v1/sessions/s/actions/ask_model", json={})
        assert r.status_code == 403 and "--paid-actions" in r.json()["error"]["message"], r.text
    assert upstream.requests == []
    with running(_action_app(store, upstream, paid_actions=True)) as url:
        r = httpx.post(f"{url}/v1/sessions/s/actions/ask_model", json={})
        assert r.status_code == 200, r.text
        assert httpx.get(f"{url}/v1/sessions/s").json()["metadata"]["summary"] == "a summary"


def test_an_action_whose_client_hung_up_makes_no_model_call_after_it(store: Any, upstream: ScriptedServer) -> None:
    upstream.enqueue(_chat_reply("never asked"))
    with running(_action_app(store, upstream, paid_actions=True)) as url:
        httpx.post(f"{url}/v1/sessions", json={"id": "s"})
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/sessions/s/actions/ask_model", json={"params": {"wait_s": 0.6}}, timeout=0.2)
        time.sleep(1.0)  # the action ends its wait and would ask now
        assert upstream.requests == []
        # the session's lease was given back: the next action runs
        r = httpx.post(f"{url}/v1/sessions/s/actions/ask_model", json={})
        assert r.status_code == 200, r.text


@pytest.mark.slow  # eight actions against an upstream that stalls a second: the tier `pytest -m slow`
def test_actions_have_threads_and_places_of_their_own_so_turns_keep_their_pace(
        store: Any, upstream: ScriptedServer) -> None:
    """Eight slow paid actions at once: two run (the tenant's places), the rest are told why; turns keep pace."""
    from providers._server import Reply

    for _ in range(8):
        upstream.enqueue(Reply(200, {"content-type": "application/json"}, [b""], chunked=False, stall=1.0))
    with running(_action_app(store, upstream, paid_actions=True)) as url:
        for i in range(8):
            httpx.post(f"{url}/v1/sessions", json={"id": f"a{i}"})

        def turn() -> float:
            began = time.perf_counter()
            r = httpx.post(f"{url}/v1/sessions/t/turns", json={"message": "hi", "config": {"model": "echo"}})
            assert r.status_code == 200, r.text
            return time.perf_counter() - began

        alone = min(turn() for _ in range(3))
        answers: list[int] = []
        threads = [threading.Thread(target=lambda i=i: answers.append(httpx.post(
            f"{url}/v1/sessions/a{i}/actions/ask_model", json={}, timeout=30).status_code)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        busy = min(turn() for _ in range(3))
        for t in threads:
            t.join()
    assert sorted(answers).count(429) == 6, answers
    # the actions' upstream stalls 1 s: a turn that waited for a thread they held would take that long
    assert busy < max(1.5 * alone, alone + 0.2), (alone, busy)


def test_one_tenant_cannot_take_every_slot_of_the_process(tmp_path: Path, store: Any,
                                                          upstream: ScriptedServer) -> None:
    """With several tenants a tenant gets at most half the slots: alice's second request waits; bob's runs."""
    from providers._server import Reply

    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[tenants]]\nname = "alice"\ntoken = "alice-token-0123456789"\n\n'
                      '[[tenants]]\nname = "bob"\ntoken = "bob-token-0123456789ab"\n')
    upstream.enqueue(Reply(200, {"content-type": "application/json"}, [b"{}"], chunked=False, stall=0.8))
    settings = ServeSettings(tokens_file=str(tokens), max_concurrent=2)
    with running(create_app(store=store, config=_operator(upstream), settings=settings)) as url:
        alice = {"authorization": "Bearer alice-token-0123456789"}
        slow = threading.Thread(target=lambda: httpx.post(
            f"{url}/v1/chat/completions", headers=alice, timeout=10,
            json={"model": "openai/m", "messages": [{"role": "user", "content": "slow"}]}))
        slow.start()
        time.sleep(0.3)
        r = httpx.get(f"{url}/healthz", headers=alice)
        assert r.status_code == 429 and r.json()["error"]["type"] == "tenant_busy" and r.headers["retry-after"] == "1"
        assert httpx.get(f"{url}/healthz", headers={"authorization": "Bearer bob-token-0123456789ab"}).status_code == 200
        slow.join()
        assert httpx.get(f"{url}/healthz", headers=alice).status_code == 200
