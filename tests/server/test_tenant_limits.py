"""Tenant limits counted in the store: they hold across server processes, and answer in each API's error shape."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.errors import ConfigError
from agent_core.server import ServeSettings, create_app
from agent_core.store import open_store
from agent_core.store.tenant_ledger import Admitted, Limits, Refused, TenantLedger
from providers._server import Delay, ScriptedServer, json_reply, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running

TOKEN = "limited-token-0123456789"
FREE = "free-token-0123456789"
ADMIN = "admin-token-0123456789"
PRICES = {"m": {"input": 1000.0, "output": 1000.0}}  # dollars per million tokens: 0.001 a token


def _tokens_file(tmp_path: Path, limits: str) -> str:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[tenants]]\nname = "ltd"\ntoken = "{TOKEN}"\nlimits = {{ {limits} }}\n\n'
                    f'[[tenants]]\nname = "free"\ntoken = "{FREE}"\n')
    return str(path)


def _answer(tokens_out: int = 10) -> Any:
    return json_reply({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": tokens_out, "total_tokens": 10 + tokens_out}})


@contextmanager
def _servers(tmp_path: Path, upstream: ScriptedServer, limits: str, count: int = 2) -> Iterator[list[str]]:
    """``count`` servers on one SQLite file (as workers are), the tenant ``ltd`` limited."""
    url = f"sqlite:///{tmp_path}/shared.db"
    settings = ServeSettings(tokens_file=_tokens_file(tmp_path, limits))
    operator = {"base_url": f"{upstream.url}/v1", "api_key": "sk-x-0123456789", "max_retries": 0, "prices": PRICES}
    with ExitStack() as stack:
        bases = []
        for _ in range(count):
            store = open_store(url)
            stack.callback(store.close)
            app = create_app(store=store, config=operator, settings=settings, cancel_url=url, admin_token=ADMIN)
            bases.append(stack.enter_context(running(app, lifespan="on")))
        yield bases


def _chat(base: str, token: str = TOKEN, path: str = "/v1/chat/completions") -> httpx.Response:
    if path == "/v1/messages":
        body: dict[str, Any] = {"model": "openai/m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    else:
        body = {"model": "openai/m", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(base + path, json=body, headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_requests_per_minute_hold_across_servers_in_each_dialect(tmp_path: Path, server: ScriptedServer) -> None:
    for _ in range(3):
        server.enqueue(_answer())
    with ExitStack() as stack:
        a, b = stack.enter_context(_servers(tmp_path, server, "requests_per_minute = 3"))
        assert [_chat(x).status_code for x in (a, b, a)] == [200, 200, 200]
        refused = _chat(b)
        assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 61
        assert refused.json()["error"]["type"] == "rate_limit_error"  # OpenAI's shape
        anthropic = _chat(a, path="/v1/messages")
        assert anthropic.status_code == 429 and anthropic.json()["type"] == "error"  # Anthropic's shape
        assert anthropic.json()["error"]["type"] == "rate_limit_error" and "retry-after" in anthropic.headers
        assert len(server.requests) == 3  # the refused ones never reached the model
        server.enqueue(_answer())
        assert _chat(a, FREE).status_code == 200  # another tenant is not held by it
        usage = httpx.get(f"{b}/v1/admin/tenants/usage", headers={"authorization": f"Bearer {ADMIN}"}, timeout=10)
        assert usage.status_code == 200
        (row,) = usage.json()["data"]  # the tenant without limits is not counted
        assert (row["tenant"], row["requests"], row["tokens"], row["requests_this_minute"]) == ("ltd", 3, 60, 3)
        for wrong in (TOKEN, "admin-token"):
            refused = httpx.get(f"{a}/v1/admin/tenants/usage", headers={"authorization": f"Bearer {wrong}"},
                                timeout=10)
            assert refused.status_code == 401 and ADMIN not in refused.text


def test_concurrent_requests_are_capped_across_servers(tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "Hel"}), Delay(3), oa_chunk({}, "stop"),
                             OA_DONE))
    with ExitStack() as stack:
        a, b = stack.enter_context(_servers(tmp_path, server, "max_concurrent = 1"))
        body = {"model": "openai/m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.stream("POST", f"{a}/v1/chat/completions", json=body, timeout=30,
                          headers={"authorization": f"Bearer {TOKEN}"}) as streaming:
            lines = streaming.iter_lines()  # kept: a dropped iterator closes the stream (the client leaves)
            next(lines)
            second = _chat(b)
            assert second.status_code == 429 and second.headers["retry-after"] == "1", second.text
            assert "in flight across the servers" in second.json()["error"]["message"]
            assert "[DONE]" in "".join(lines)
        server.enqueue(_answer())
        assert _chat(b).status_code == 200  # its place came back when the stream ended


def test_a_budget_is_not_exceeded_by_more_than_one_request_under_concurrency(tmp_path: Path,
                                                                             server: ScriptedServer) -> None:
    """Each request costs 0.02 dollars (20 tokens at 0.001); the budget is 0.1; twenty are sent at once."""
    for _ in range(20):
        server.enqueue(_answer())
    with ExitStack() as stack:
        bases = stack.enter_context(_servers(tmp_path, server, "budget_usd = 0.1"))
        statuses: list[int] = []

        def send(i: int) -> None:
            for _ in range(3):  # a 429 (the budget held by requests in flight) is retried, as SDKs do
                status = _chat(bases[i % 2]).status_code
                if status != 429:
                    break
            statuses.append(status)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ledger = TenantLedger(f"sqlite:///{tmp_path}/shared.db")
        (use,) = [u for u in ledger.usage() if u.tenant == "ltd"]
        ledger.close()
        assert use.spent_usd <= 0.1 + 0.02 + 1e-9
        assert statuses.count(200) == use.requests == len(server.requests)
        assert 402 in statuses
        refused = _chat(bases[0])
        assert refused.status_code == 402 and "budget" in refused.json()["error"]["message"]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/ledger.db"
    from .conftest import pg_schema_url

    return pg_schema_url(request.getfixturevalue("pg"))


def test_the_ledger_decides_in_order_and_frees_a_dead_process_places(ledger_url: str) -> None:
    ledger = TenantLedger(ledger_url)
    try:
        limits = Limits(max_concurrent=2, budget_usd=1.0)
        first = ledger.admit("t", limits, now=1000.0)
        assert isinstance(first, Admitted)
        held = ledger.admit("t", limits, now=1000.0)  # no cost known yet: one at a time under a budget
        assert isinstance(held, Refused) and held.kind == "budget_held"
        ledger.settle("t", first.rid, tokens=30, cost=0.4, now=1001.0)
        a, b = ledger.admit("t", limits, now=1002.0), ledger.admit("t", limits, now=1002.0)
        assert isinstance(a, Admitted) and isinstance(b, Refused)  # 0.4 spent + 0.4 held + 0.4 > 1.0
        # the holder died: its row lapses after the hold, and the place is free again
        later = ledger.admit("t", limits, now=1002.0 + 61)
        assert isinstance(later, Admitted)
        ledger.settle("t", later.rid, tokens=30, cost=0.7, now=1070.0)
        spent = ledger.admit("t", limits, now=1071.0)
        assert isinstance(spent, Refused) and spent.status == 402
        (use,) = ledger.usage(now=1071.0)
        assert (use.tenant, use.requests, use.tokens, use.spent_usd) == ("t", 2, 60, 1.1)
    finally:
        ledger.close()


def test_limits_in_the_tokens_file_are_checked(tmp_path: Path) -> None:
    for bad, said in (("max_concurrent = 0", "at least 1"), ("per_hour = 3", "per_hour"),
                      ("budget_usd = -1.0", "budget_usd")):
        with pytest.raises(ConfigError, match=said):
            create_app(settings=ServeSettings(tokens_file=_tokens_file(tmp_path, bad)))


def test_the_operator_reads_each_tenant_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from agent_core.cli import main

    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = TenantLedger(url)
    try:
        first = ledger.admit("alice", Limits(requests_per_minute=10))
        assert isinstance(first, Admitted)
        ledger.settle("alice", first.rid, tokens=42, cost=0.25)
        assert isinstance(ledger.admit("bob", Limits()), Admitted)  # still running
    finally:
        ledger.close()
    assert main(["tenants", "usage", "--store", url, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["tenant"], r["requests"], r["tokens"], r["spent_usd"], r["running"]) for r in rows] == [
        ("alice", 1, 42, 0.25, 0), ("bob", 0, 0, 0.0, 1)]
    assert main(["tenants", "usage", "--store", url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["TENANT", "REQUESTS", "TOKENS", "SPENT"] and table[1].split()[:4] == [
        "alice", "1", "42", "0.250000"]


@pytest.mark.slow
def test_two_ledgers_on_postgresql_never_both_take_the_last_place(request: pytest.FixtureRequest) -> None:
    """Two processes' ledgers (two connections) racing for one place: the advisory lock lets one in."""
    pytest.importorskip("psycopg")
    from .conftest import pg_schema_url

    url = pg_schema_url(request.getfixturevalue("pg"))
    ledgers = [TenantLedger(url) for _ in range(2)]
    try:
        for round_ in range(20):
            verdicts: list[Any] = []
            barrier = threading.Barrier(2)

            def take(ledger: TenantLedger) -> None:
                barrier.wait()
                verdicts.append(ledger.admit(f"t{round_}", Limits(max_concurrent=1)))

            threads = [threading.Thread(target=take, args=(ledger,)) for ledger in ledgers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(type(v).__name__ for v in verdicts) == ["Admitted", "Refused"]
    finally:
        for ledger in ledgers:
            ledger.close()
