"""The server's front door, attacked: a web page, a foreign Host, a client's config, slow and huge requests.

The first test is the attack that started this work: a page on another site posts a turn as
``text/plain`` (a "simple" request a browser sends cross-site without asking) whose config
points the ``openai`` provider at the attacker's server, hoping the server sends its own
``OPENAI_API_KEY`` there. It runs in a real browser; the attacker's server must see nothing.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest
from agent_core.errors import ConfigError
from agent_core.server import ServeSettings, check_exposure, create_app
from providers._server import ScriptedServer

from ._browser import load
from ._live import running

KEY = "sk-operator-secret-0123456789"


class Recorder:
    """ASGI wrapper noting each request's method, path, Origin and answer status, as the server saw them."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, str | None, int]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = dict(scope["headers"]).get(b"origin")

        async def noting(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.seen.append((scope["method"], scope["path"], origin and origin.decode(), message["status"]))
            await send(message)

        await self.app(scope, receive, noting)


@pytest.fixture
def attacker() -> Iterator[ScriptedServer]:
    """The attacker's 'OpenAI' endpoint: it records whatever reaches it."""
    srv = ScriptedServer()
    yield srv
    srv.close()


def _attack_page(target: str, evil: str) -> bytes:
    turn = json.dumps({"message": "hi", "config": {"provider": "openai", "model": "gpt-4o-mini",
                                                    "base_url": f"{evil}/v1"}})
    chat = json.dumps({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
                       "base_url": f"{evil}/v1"})
    script = f"""
    const out = [];
    const say = (s) => {{ out.push(s); document.getElementById('out').textContent = out.join('\\n'); }};
    async function go() {{
      for (const [path, body] of [['/v1/sessions/victim/turns', {json.dumps(turn)}],
                                  ['/v1/chat/completions', {json.dumps(chat)}]]) {{
        try {{
          await fetch('{target}' + path, {{method: 'POST', mode: 'no-cors',
                                            headers: {{'Content-Type': 'text/plain'}}, body}});
          say('simple ' + path + ': sent');
        }} catch (e) {{ say('simple ' + path + ': ' + e); }}
        try {{
          const r = await fetch('{target}' + path, {{method: 'POST', headers: {{'Content-Type': 'application/json'}},
                                                      body}});
          say('cors ' + path + ': ' + r.status + ' ' + (await r.text()));
        }} catch (e) {{ say('cors ' + path + ': blocked'); }}
      }}
      say('finished');
    }}
    go();
    """
    return f"<html><body><pre id='out'></pre><script>{script}</script></body></html>".encode()


@pytest.fixture
def page_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A plain web server for the attacker's pages (``pages[path] = html``), on its own port."""
    pages: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = pages.get(self.path, b"not here")
            self.send_response(200 if self.path in pages else 404)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{httpd.server_address[1]}", pages
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.slow
def test_a_web_page_cannot_send_the_servers_key_to_its_own_server(
        store: Any, attacker: ScriptedServer, page_server: tuple[str, dict[str, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    recorder = Recorder(create_app(store=store))
    page_base, pages = page_server
    with running(recorder) as target:
        pages["/attack.html"] = _attack_page(target, attacker.url)
        dom = load(f"{page_base}/attack.html")
    assert "finished" in dom, dom
    # The browser did send both simple requests; the server refused each before any route ran.
    simple = [s for s in recorder.seen if s[0] == "POST"]
    assert {path for _, path, _, _ in simple} == {"/v1/sessions/victim/turns", "/v1/chat/completions"}
    assert all(origin == page_base and status == 403 for _, _, origin, status in simple), recorder.seen
    # The CORS attempts stopped at the preflight (refused too), so the page read nothing.
    assert "cors /v1/sessions/victim/turns: blocked" in dom and "cors /v1/chat/completions: blocked" in dom
    assert all(status == 403 for method, _, _, status in recorder.seen if method == "OPTIONS")
    assert attacker.requests == []  # the key went nowhere
    assert store.list() == []  # and nothing ran


def test_the_same_turn_as_json_without_the_operators_allowance_is_refused_naming_base_url(
        store: Any, attacker: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with running(create_app(store=store)) as url:
        body = {"message": "hi", "config": {"provider": "openai", "base_url": f"{attacker.url}/v1"}}
        r = httpx.post(f"{url}/v1/sessions/victim/turns", json=body)
        assert r.status_code == 403, r.text
        error = r.json()["error"]
        assert error["type"] == "ConfigNotAllowedError" and error["param"] == "base_url"
        assert "--allow-config base_url" in error["message"]
        # every key that says where a request goes or what it may touch is the operator's
        for key, value in [("api_key", "sk-mine"), ("extra_headers", {"x": "1"}), ("extra_body", {"a": 1}),
                           ("files_root", "/"), ("enabled_plugins", ["files"]), ("force_enabled_plugins", ["files"]),
                           ("system_prompt", "x"), ("tool_policy", {}), ("prices", {}), ("max_iterations", 50)]:
            r = httpx.post(f"{url}/v1/sessions/victim/turns", json={"message": "hi", "config": {key: value}})
            assert r.status_code == 403 and r.json()["error"]["param"] == key, (key, r.text)
    assert attacker.requests == []
    assert KEY not in r.text
    assert store.list() == []


def test_a_client_chooses_the_model_but_never_where_it_runs(store: Any, attacker: ScriptedServer,
                                                            server: ScriptedServer) -> None:
    """Any installed provider by default, always on the operator's base URL; ``models`` narrows the choice."""
    from providers._server import json_reply

    server.enqueue(json_reply({"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant", "content": "from the operator's upstream"}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}))
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-op-1234567890", "max_retries": 0}
    settings = ServeSettings(models=("echo", "openai/gpt-4o-mini"))
    with running(create_app(store=store, config=operator, settings=settings)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        hi = [{"role": "user", "content": "hi"}]
        got = client.chat.completions.create(model="openai/gpt-4o-mini", messages=hi)
        assert got.choices[0].message.content == "from the operator's upstream"
        assert server.requests[-1].headers["authorization"] == "Bearer sk-op-1234567890"
        with pytest.raises(openai.PermissionDeniedError) as refused:
            client.chat.completions.create(model="openai/gpt-4o", messages=hi)
        assert "openai/gpt-4o" in str(refused.value) and "echo" in str(refused.value)
        r = httpx.post(f"{url}/v1/sessions/s/turns", json={"message": "hi", "config": {"model": "anthropic/x"}})
        assert r.status_code == 403 and r.json()["error"]["param"] == "model"
        listed = [m.id for m in client.models.list()]
        assert all(m.startswith("echo/") or m == "openai/gpt-4o-mini" for m in listed), listed
        assert client.chat.completions.create(model="echo", messages=hi).choices[0].message.content == "Echo: hi"
    assert len(server.requests) == 1 and attacker.requests == []


def test_a_null_in_a_clients_config_does_not_lift_an_operator_cap() -> None:
    from agent_core import ConfigPolicy

    merged = ConfigPolicy().merge({"max_tokens": 100, "provider": "openai"}, {"max_tokens": None, "temperature": 0.5})
    assert merged == {"max_tokens": 100, "provider": "openai", "temperature": 0.5}


# -- cross-site and DNS rebinding, without a browser ------------------------------------------


def test_a_body_that_is_not_json_by_content_type_is_415(base_url: str) -> None:
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = httpx.post(f"{base_url}/v1/sessions/s/turns", content=b'{"message": "hi"}', headers={"content-type": ctype})
        assert r.status_code == 415 and r.json()["error"]["type"] == "unsupported_media_type", ctype
    r = httpx.post(f"{base_url}/v1/sessions/s/turns", content=b'{"message": "hi"}')  # no content type at all
    assert r.status_code == 415
    r = httpx.post(f"{base_url}/v1/sessions/s/turns", content=b'{"message": "hi", "config": {"model": "echo"}}',
                   headers={"content-type": "Application/JSON; charset=utf-8"})
    assert r.status_code == 200
    for ctype in ("application/json; charset=utf-7", 'application/json; charset="UTF-16"', "application/json;charset=latin1"):
        r = httpx.post(f"{base_url}/v1/sessions/s/turns", content=b'{"message": "hi"}', headers={"content-type": ctype})
        assert r.status_code == 415 and "UTF-8" in r.json()["error"]["message"], ctype  # JSON is UTF-8 only
    r = httpx.post(f"{base_url}/v1/sessions/s2/turns", content=b'{"message": "hi", "config": {"model": "echo"}}',
                   headers={"content-type": 'application/json; charset="UTF8"'})
    assert r.status_code == 200


def test_a_foreign_host_header_is_refused(store: Any) -> None:
    with running(create_app(store=store)) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "", "local host", "[::1"):
            r = httpx.get(f"{url}/healthz", headers={"host": host})
            assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_host", host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "LOCALHOST", f"[::1]:{port}", "localhost."):
            assert httpx.get(f"{url}/healthz", headers={"host": host}).status_code == 200, host
    with running(create_app(store=store, settings=ServeSettings(allowed_hosts=("api.example.com", "*.corp.example")))) as url:
        assert httpx.get(f"{url}/healthz", headers={"host": "api.example.com"}).status_code == 200
        assert httpx.get(f"{url}/healthz", headers={"host": "a.corp.example:443"}).status_code == 200
        assert httpx.get(f"{url}/healthz", headers={"host": "corp.example"}).status_code == 400


def _raw_head(url: str, head: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(head)
        answer = b""
        while b"\r\n\r\n" not in answer and (part := s.recv(65536)):
            answer += part
    return answer


def test_a_repeated_host_or_origin_header_cannot_slip_past_the_check(store: Any) -> None:
    """Two Host headers: a proxy may read the last, so neither is trusted; two Origins: both must pass."""
    import asyncio

    app = create_app(store=store)
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    # h11 (serve's protocol) refuses two Host headers itself; httptools, uvicorn's other one, passes both on
    scope = {"type": "http", "method": "GET", "path": "/healthz", "scheme": "http", "query_string": b"",
             "headers": [(b"host", b"localhost"), (b"host", b"evil.example")]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400 and b"more than one Host header" in sent[1]["body"]
    with running(app) as url:
        two_hosts = _raw_head(url, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n")
        assert two_hosts.startswith(b"HTTP/1.1 400"), two_hosts[:200]
        two_origins = _raw_head(url, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\n"
                                     b"Origin: http://evil.example\r\n\r\n")
        assert two_origins.startswith(b"HTTP/1.1 403") and b"origin_not_allowed" in two_origins, two_origins[:200]
        one = _raw_head(url, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert one.startswith(b"HTTP/1.1 200"), one[:200]


def test_a_huge_head_sent_whole_is_refused(store: Any) -> None:
    """h11 bounds a head still arriving (16 KiB); one that arrives whole in one read is bounded here (32 KiB)."""
    with running(create_app(store=store)) as url:
        padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 1000) for i in range(70))  # about 70 KB
        huge = _raw_head(url, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + padding + b"\r\n")
        assert huge.startswith(b"HTTP/1.1 4"), huge[:200]  # 431 from the gate, or 400 from h11 if it splits
        some = b"".join(line + b"\r\n" for line in padding.split(b"\r\n")[:11])
        fine = _raw_head(url, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + some + b"\r\n")  # about 11 KB
        assert fine.startswith(b"HTTP/1.1 200"), fine[:200]


def test_origins_same_origin_passes_a_foreign_one_is_refused_and_cors_is_opt_in(store: Any) -> None:
    with running(create_app(store=store)) as url:
        same = httpx.post(f"{url}/v1/sessions", json={"id": "a"}, headers={"origin": url})
        assert same.status_code == 201
        for origin in ("http://evil.example", "null", url.replace("http:", "https:"), url + ".evil.example"):
            r = httpx.post(f"{url}/v1/sessions", json={"id": "b"}, headers={"origin": origin})
            assert r.status_code == 403 and r.json()["error"]["type"] == "origin_not_allowed", origin
    app = create_app(store=store, settings=ServeSettings(cors_origins=("https://app.example",)))
    with running(app) as url:
        pre = httpx.options(f"{url}/v1/sessions", headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, authorization"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "https://app.example"
        r = httpx.post(f"{url}/v1/sessions", json={"id": "c"}, headers={"origin": "https://app.example"})
        assert r.status_code == 201 and r.headers["access-control-allow-origin"] == "https://app.example"
        assert "etag" in r.headers["access-control-expose-headers"]
        r = httpx.post(f"{url}/v1/sessions", json={"id": "d"}, headers={"origin": "https://other.example"})
        assert r.status_code == 403


def test_listening_beyond_loopback_needs_a_token_or_insecure() -> None:
    with pytest.raises(ConfigError, match="--token"):
        check_exposure("0.0.0.0", None, ServeSettings())
    with pytest.raises(ConfigError):
        check_exposure("192.168.1.5", None, ServeSettings())
    assert check_exposure("0.0.0.0", "t0k3n", ServeSettings()).allowed_hosts == ()
    assert check_exposure("192.168.1.5", "t0k3n", ServeSettings()).allowed_hosts == ("192.168.1.5",)
    assert check_exposure("10.0.0.1", None, ServeSettings(insecure=True)).allowed_hosts == ("10.0.0.1",)
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert check_exposure(host, None, ServeSettings()) == ServeSettings()


def test_agent_core_serve_refuses_to_start_exposed_without_a_token(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "serve", "--host", "0.0.0.0", "--port", "1"],
                          capture_output=True, timeout=60, env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)},
                          check=False)
    assert done.returncode != 0
    assert "--token" in done.stderr.decode() and "Traceback" not in done.stderr.decode()


# -- limits ----------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(store: Any) -> None:
    with running(create_app(store=store, settings=ServeSettings(max_body_bytes=1000))) as url:
        big = {"message": "x" * 2000}
        r = httpx.post(f"{url}/v1/sessions/s/turns", json=big)
        assert r.status_code == 413 and "1000 bytes" in r.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"message": "'
            for _ in range(20):
                yield b"x" * 100
            yield b'"}'

        r = httpx.post(f"{url}/v1/sessions/s/turns", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        small = {"message": "small", "config": {"model": "echo"}}
        assert httpx.post(f"{url}/v1/sessions/s/turns", json=small).status_code == 200


def test_deep_json_and_too_many_messages_are_400(store: Any) -> None:
    settings = ServeSettings(max_json_depth=8, max_messages=3)
    with running(create_app(store=store, settings=settings)) as url:
        deep: Any = "x"
        for _ in range(20):
            deep = {"k": deep}
        r = httpx.post(f"{url}/v1/sessions/s/turns", json={"message": "hi", "config": {"metadata": deep}})
        assert r.status_code == 400 and "8 levels" in r.json()["error"]["message"]
        r = httpx.post(f"{url}/v1/sessions/s/turns", content=b"[" * 100_000 + b"]" * 100_000,
                       headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_json"
        many = [{"role": "user", "content": str(i)} for i in range(4)]
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "echo", "messages": many})
        assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
        r = httpx.get(f"{url}/v1/plugins", params={"metadata": "[" * 5000 + "]" * 5000})
        assert r.status_code == 400


def test_a_slow_body_is_408_and_slow_headers_are_cut_off(store: Any) -> None:
    settings = ServeSettings(body_timeout_s=0.5)
    with running(create_app(store=store, settings=settings), header_timeout_s=0.5) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as s:  # headers complete, body trickles
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{")
            s.settimeout(5)
            answer = b""
            while chunk := s.recv(4096):  # the server closes the connection after its answer
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408") and b"body_timeout_s" in answer
        with socket.create_connection((host, int(port))) as s:  # headers that never finish
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: local")
            s.settimeout(5)
            started = time.monotonic()
            assert s.recv(4096) == b""  # closed by the server, without an answer
            assert time.monotonic() - started < 3
        with socket.create_connection((host, int(port))) as s:  # a kept-alive connection, then slow headers
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            s.settimeout(5)
            got = b""
            while b'{"status":"ok"}' not in got:
                got += s.recv(4096)
            assert got.startswith(b"HTTP/1.1 200")
            s.sendall(b"GET /heal")
            assert s.recv(4096) == b""
        assert httpx.get(f"{url}/healthz").status_code == 200  # everyone else is served as usual


def test_requests_beyond_max_concurrent_get_503_with_retry_after(store: Any, server: ScriptedServer) -> None:
    from providers._server import Delay, sse_reply
    from providers._wire import OA_DONE, oa_chunk

    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "a"}), Delay(1), oa_chunk({}, "stop"), OA_DONE))
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-x", "max_retries": 0}
    with running(create_app(store=store, config=operator, settings=ServeSettings(max_concurrent=1))) as url:
        with httpx.stream("POST", f"{url}/v1/sessions/s/turns", timeout=30,
                          json={"message": "hi", "config": {"model": "openai/m"}}) as held:
            assert held.status_code == 200
            r = httpx.get(f"{url}/healthz")
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert r.json()["error"]["type"] == "server_busy"
            held.read()
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_the_bearer_scheme_is_matched_in_any_case(store: Any) -> None:
    with running(create_app(store=store, token="tok-0123456789abcdef")) as url:
        for auth in ("Bearer tok-0123456789abcdef", "bearer tok-0123456789abcdef", "BEARER   tok-0123456789abcdef"):
            assert httpx.get(f"{url}/healthz", headers={"authorization": auth}).status_code == 200, auth
        for auth in ("Basic tok-0123456789abcdef", "Bearertok-0123456789abcdef", "Bearer", "tok-0123456789abcdef"):
            assert httpx.get(f"{url}/healthz", headers={"authorization": auth}).status_code == 401, auth
