"""What ``agent-core serve`` prints, read from its output as the user sees it.

Each test starts the real process (``start_serve`` keeps its stderr in ``serve-PORT.log``),
makes requests, stops it with SIGTERM and reads the log: the banner once it listens, one
line per request with its status and request id, a line as it stops, nothing with
``--quiet``, JSON with ``--log-json``, and never a token or an API key.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.server import create_app
from providers._server import Delay, Reply, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running, start_serve, stop_serve
from .conftest import pg_schema_url

pytestmark = pytest.mark.slow  # each test starts agent-core serve as a process: the tier `pytest -m slow`

TOKEN = "tok-never-printed-7f31"
API_KEY = "sk-never-printed-93ab"
AUTH = {"authorization": f"Bearer {TOKEN}"}
HI = [{"role": "user", "content": "hi"}]


def _output(tmp_path: Path, url: str) -> str:
    port = url.rsplit(":", 1)[1]
    return (tmp_path / f"serve-{port}.log").read_text()


def _request_lines(output: str, what: str) -> list[str]:
    """The access lines for ``what`` (``METHOD /path``): a time, then the request."""
    return re.findall(rf"^\d\d:\d\d:\d\d {re.escape(what)} .*$", output, re.MULTILINE)


def test_the_banner_one_line_per_request_and_the_stop_line_with_no_secret(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path, "--token", TOKEN, "-c", f"api_key={API_KEY}",
                            "--model-alias", "fast=openai/gpt-4o-mini")
    try:
        answer = httpx.post(f"{url}/v1/chat/completions", headers={**AUTH, "x-request-id": "req-17"},
                            json={"model": "echo", "messages": HI})
        refused = httpx.get(f"{url}/v1/models")  # no token
        turn = httpx.post(f"{url}/v1/sessions/s1/turns?session_secret=qs-9", headers=AUTH, json={"message": "hi"})
        odd = httpx.get(f"{url}/v1/a%0Afake%20line", headers=AUTH)
    finally:
        stop_serve(proc)
    assert (answer.status_code, refused.status_code, turn.status_code, odd.status_code) == (200, 401, 200, 404)
    output = _output(tmp_path, url)

    assert f"agent-core serve: listening on {url} (Ctrl+C to stop)" in output
    assert f"  store      sqlite:///{tmp_path}/sessions.db\n" in output
    assert "  auth       one token" in output
    assert re.search(r"^  providers  .*\becho\b", output, re.MULTILINE)
    assert "  default    echo (the offline provider" in output
    assert "aliases: fast -> openai/gpt-4o-mini" in output
    assert "  docs       " in output and "server.md" in output

    [chat] = _request_lines(output, "POST /v1/chat/completions")
    assert re.fullmatch(r"\S+ POST /v1/chat/completions 200 \d+\.\d ms id=req-17", chat)
    assert _request_lines(output, "GET /v1/models")[0].split()[3] == "401"
    [saved] = _request_lines(output, "POST /v1/sessions/s1/turns")  # the path, not its query
    assert " 200 " in saved and f"id={turn.headers['x-request-id']}" in saved
    assert "qs-9" not in output and "session_secret" not in output
    [escaped] = _request_lines(output, "GET /v1/a%0Afake%20line")  # a decoded newline cannot forge a line
    assert " 404 " in escaped and not re.search(r"^fake", output, re.MULTILINE)

    assert "stopping: no request running" in output
    assert output.rstrip().endswith("stopped")
    assert TOKEN not in output and API_KEY not in output


def test_a_streamed_answer_is_logged_once_when_it_ends(tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                             Delay(0.4), oa_chunk({"content": "lo"}), oa_chunk({}, "stop"), OA_DONE))
    proc, url = start_serve(tmp_path, "--log-json", "-c", f"base_url={server.url}/v1", "-c", f"api_key={API_KEY}")
    try:
        body = {"model": "openai/gpt-4o-mini", "messages": HI, "stream": True}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers={"x-request-id": "s-1"}) as r:
            text = "".join(r.iter_text())
    finally:
        stop_serve(proc)
    assert "[DONE]" in text
    records = [json.loads(line) for line in _output(tmp_path, url).splitlines()]
    [line] = [r for r in records if r.get("path") == "/v1/chat/completions"]
    assert (line["status"], line["request_id"]) == (200, "s-1")
    assert line["duration_ms"] >= 400  # written after the last chunk, so it spans the upstream's pause
    assert API_KEY not in _output(tmp_path, url)


def test_log_json_writes_one_object_per_line(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path, "--log-json", "-c", f"api_key={API_KEY}", "--token", TOKEN)
    try:
        httpx.get(f"{url}/v1/models?limit=3", headers={**AUTH, "x-request-id": "j-1"})
    finally:
        stop_serve(proc)
    output = _output(tmp_path, url)
    records = [json.loads(line) for line in output.splitlines()]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]) for r in records)
    start = records[0]
    assert (start["event"], start["level"], start["address"], start["auth"]) == ("start", "info", url, "token")
    assert start["default_provider"] == "echo" and "echo" in start["providers"]
    assert start["message"] == f"agent-core serve: listening on {url} (Ctrl+C to stop)"
    [models] = [r for r in records if r["event"] == "request" and r["path"] == "/v1/models"]
    assert {k: models[k] for k in ("method", "status")} == {"method": "GET", "status": 200}
    assert isinstance(models["duration_ms"], float) and "limit" not in json.dumps(models)
    assert [r["event"] for r in records[-2:]] == ["stopping", "stop"]
    assert TOKEN not in output and API_KEY not in output


def test_quiet_prints_only_where_it_listens_while_all_is_well(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path, "--quiet")
    try:
        assert httpx.get(f"{url}/v1/sessions").status_code == 200
        assert httpx.get(f"{url}/nowhere").status_code == 404
    finally:
        stop_serve(proc)
    assert _output(tmp_path, url) == f"agent-core serve: listening on {url}\n"  # the bound port, for a script


def test_quiet_still_prints_the_error_that_stops_it(tmp_path: Path) -> None:
    """uvicorn's own errors still reach the output, in the chosen format."""
    proc, url = start_serve(tmp_path, "--quiet")
    port = url.rsplit(":", 1)[1]
    try:
        second = subprocess.run(
            [sys.executable, "-m", "agent_core.cli", "serve", "--port", port, "--quiet", "--log-json"],
            env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)}, capture_output=True, text=True, timeout=30,
            check=False)
    finally:
        stop_serve(proc)
    assert second.returncode != 0 and second.stdout == ""
    [error] = [json.loads(line) for line in second.stderr.splitlines()]
    assert error["level"] == "error" and error["logger"] == "uvicorn.error"
    assert "address already in use" in error["message"].lower()


def test_log_level_warning_drops_the_info_lines(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path, "--log-level", "warning")
    try:
        httpx.get(f"{url}/healthz")
    finally:
        stop_serve(proc)
    assert _output(tmp_path, url) == f"agent-core serve: listening on {url}\n"  # as with --quiet: the address only


def _stopped_during(tmp_path: Path, server: ScriptedServer, request: Any) -> str:
    """Serve with a 0.3 s grace; ``request(url, sigterm)`` sends SIGTERM mid-request; the whole output.

    The request outlives the grace; the stop line must count it as cancelled.
    """
    proc, url = start_serve(tmp_path, "--grace", "0.3", "-c", f"base_url={server.url}/v1", "-c", f"api_key={API_KEY}",
                            "-c", "max_retries=0")
    try:
        request(url, lambda: proc.send_signal(signal.SIGTERM))
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            stop_serve(proc)
    output = _output(tmp_path, url)
    assert "stopping: 1 request running, given up to 0.3 s to finish (--grace)" in output
    assert output.rstrip().endswith("stopped; cancelled 1 request still running after the grace period")
    return output


def test_the_stop_lines_count_the_requests_still_running(tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hel"}),
                             Delay(30), oa_chunk({}, "stop"), OA_DONE))
    body = {"model": "openai/gpt-4o-mini", "messages": HI, "stream": True}

    def request(url: str, sigterm: Any) -> None:
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers={"x-request-id": "late-1"}) as r:
            lines = r.iter_lines()
            next(lines)  # the answer has begun
            sigterm()
            with contextlib.suppress(httpx.HTTPError):  # the server closes it at the end of its grace
                for _ in lines:
                    pass

    output = _stopped_during(tmp_path, server, request)
    [late] = _request_lines(output, "POST /v1/chat/completions")
    assert re.fullmatch(r"\S+ POST /v1/chat/completions 200 \d+\.\d ms id=late-1 \(cut short\)", late)
    assert "Traceback" not in output  # the cut request's line says so; uvicorn's traceback for it is dropped


def test_the_stop_line_counts_a_non_streamed_request_cut_at_the_end_of_the_grace(tmp_path: Path,
                                                                                   server: ScriptedServer) -> None:
    """However soon the cut request unwinds, the stop line counts it (it ran past the grace period)."""
    import threading

    server.enqueue(Reply(stall=30))
    body = {"model": "openai/gpt-4o-mini", "messages": HI}
    asked = len(server.requests)

    def request(url: str, sigterm: Any) -> None:
        def ask() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the server closes it at the end of its grace
                httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)

        threading.Thread(target=ask, daemon=True).start()
        deadline = time.monotonic() + 10
        while len(server.requests) == asked:  # the upstream call is under way
            assert time.monotonic() < deadline
            time.sleep(0.02)
        sigterm()

    _stopped_during(tmp_path, server, request)


def test_the_store_password_stays_out_of_the_output(tmp_path: Path, pg: Any) -> None:
    """The test server trusts any password, so one can be given and must not be printed."""
    url_with_password = pg_schema_url(pg).replace("postgres@", "postgres:pg-pass-never-printed@", 1)
    proc, url = start_serve(tmp_path, "--store", url_with_password, "--log-json")
    try:
        assert httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi"}).status_code == 200
    finally:
        stop_serve(proc)
    output = _output(tmp_path, url)
    [start] = [json.loads(line) for line in output.splitlines() if '"start"' in line]
    assert start["store"].startswith("postgresql://postgres:<redacted>@127.0.0.1:")
    assert "pg-pass-never-printed" not in output


def test_the_banner_counts_the_tenants_of_a_tokens_file_and_shows_none_of_their_tokens(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[tenants]]\nname = "alice"\ntoken = "{TOKEN}"\n\n'
                      '[[tenants]]\nname = "bob"\ntoken = "tok-bob-never-printed"\nmodels = ["openai"]\n')
    proc, url = start_serve(tmp_path, "--tokens-file", str(tokens), "--default-provider", "openai")
    try:
        assert httpx.get(f"{url}/v1/models", headers=AUTH).status_code == 200
    finally:
        stop_serve(proc)
    output = _output(tmp_path, url)
    assert f"  auth       2 tenants from {tokens}\n" in output
    assert "  default    openai (--default-provider)\n" in output
    assert TOKEN not in output and "tok-bob-never-printed" not in output


def _records_of(caplog: pytest.LogCaptureFixture, path: str) -> list[logging.LogRecord]:
    """The server logger's records of requests to ``path``: a request of some other process that
    happens on the test server's port (a client still retrying an earlier test's server that had
    that port) must not count."""
    return [r for r in caplog.records if r.name == "agent_core.server" and getattr(r, "fields", {}).get("path") == path]


def test_an_embedding_application_gets_the_records_from_the_agent_core_server_logger(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="agent_core.server"), running(create_app(store=store)) as url:
        httpx.get(f"{url}/v1/sessions?after=secret-cursor", headers={"x-request-id": "e-1"})
    [record] = _records_of(caplog, "/v1/sessions")
    assert record.event == "request"  # type: ignore[attr-defined]
    assert record.fields == {"method": "GET", "path": "/v1/sessions", "status": 200,  # type: ignore[attr-defined]
                             "duration_ms": record.fields["duration_ms"], "request_id": None}  # type: ignore[attr-defined]


class _BrokenStore:
    """A store whose every call fails as no store error does: the route's 500 is unexpected."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("the disk caught fire")


def test_a_request_that_raises_is_logged_as_a_500_naming_the_error(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="agent_core.server"), running(create_app(store=_BrokenStore())) as url:
        assert httpx.get(f"{url}/v1/sessions").status_code == 500
    [record] = _records_of(caplog, "/v1/sessions")
    assert record.getMessage().startswith("GET /v1/sessions 500 ") and record.getMessage().endswith(" (RuntimeError)")
    assert record.fields["error"] == "RuntimeError"  # type: ignore[attr-defined]
