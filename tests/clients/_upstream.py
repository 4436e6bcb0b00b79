"""The scripted upstream: OpenAI's and Anthropic's APIs on 127.0.0.1, for the client tier.

Theory of operation. ``agent-core serve`` runs with its ``openai`` provider pointed at
``<url>/v1`` and its ``anthropic`` provider at ``<url>/anthropic``. A test queues what the
model API answers (:mod:`._answers`; for ``/v1/responses``, which its ``openai_responses``
provider calls, :mod:`._responses_answers`, after refusing what that API refuses); each POST
to a completion route takes the next answer
queued for its API and plays it in the form the request asked for, a JSON body or a stream
when the body says ``"stream": true``, as the real API does. So a test says what the model
answered, not how the gateway chose to ask for it.

A Messages body is checked as Anthropic's API checks it (``providers._anthropic_api``): one
it would refuse (a tool choice in OpenAI's shape, a thinking block whose signature this
upstream never issued for that text, a malformed ``cache_control``) gets the API's 400 and
takes no queued answer. ``count_tokens`` answers from the body (:func:`counted_tokens`).

Every request is recorded (method, path, headers, JSON body) so a test can assert what the
gateway sent upstream and how often: a client that tries once must cost one upstream request,
however the gateway handles a 429.

The model lists (``GET /v1/models``, ``/v1/models/{id}``, ``/anthropic/v1/models``) are fixed
and never take a queued answer: the gateway asks for them whenever a client lists models.

Modelled on ``tests/providers/_server.py`` (real sockets, HTTP/1.1 keep-alive, streams sent
with chunked transfer encoding and flushed piece by piece) with two differences that the
client tier needs: answers are chosen by route, and played in the form the request asks for.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

from providers._anthropic_api import count_fault, messages_fault

__all__ = ["API", "COUNT_ROUTE", "Answer", "Played", "Received", "Upstream", "counted_tokens"]

API = Literal["openai", "anthropic", "responses"]

#: The completion routes, and which API's queue each one takes its answer from.
ROUTES: dict[tuple[str, str], API] = {
    ("POST", "/v1/chat/completions"): "openai",
    ("POST", "/anthropic/v1/messages"): "anthropic",
    ("POST", "/v1/responses"): "responses",
}
#: Anthropic's token count: answered from the body, checked as the API checks it
COUNT_ROUTE = "/anthropic/v1/messages/count_tokens"


@dataclass(frozen=True)
class Played:
    """One answer on the wire: status, headers, and the body in the pieces it is sent in."""

    status: int
    headers: tuple[tuple[str, str], ...]
    parts: tuple[bytes, ...]
    streamed: bool  #: chunked transfer encoding, each part flushed on its own (SSE)


class Answer(Protocol):
    """What the API answers to one request (see :mod:`._answers`)."""

    api: API

    def play(self, request: Mapping[str, Any]) -> Played:
        """The answer to this request body (JSON or stream, as the body asks)."""
        ...


@dataclass(frozen=True, repr=False)
class Received:
    """One request the upstream received."""

    method: str
    path: str  #: without the query string
    headers: Mapping[str, str]  #: names lower-cased
    body: Any  #: the decoded JSON body, or None

    def __repr__(self) -> str:  # short, for assertion messages that list the requests
        model = self.body.get("model") if isinstance(self.body, Mapping) else None
        return f"<{self.method} {self.path} model={model!r}>"


class Upstream:
    """Serve queued answers on 127.0.0.1 and record every request; a daemon thread serves."""

    def __init__(self, models: Mapping[API, Any],
                 checks: Mapping[API, Callable[[Any], Played | None]] | None = None) -> None:
        """``models``: the answer to each API's ``GET .../models`` (an :class:`Answer`-like value).

        ``checks``: per API, what it answers a body it refuses (None: it takes it), played
        instead of the next queued answer, as the real API refuses before answering.
        """
        self._lock = threading.Lock()
        self._queues: dict[API, deque[Answer]] = {"openai": deque(), "anthropic": deque(), "responses": deque()}
        self._checks = dict(checks or {})
        self._received: list[Received] = []
        self._signed: dict[str, str] = {}  # the thinking signatures answers issued: a block sent back must match
        self._models = dict(models)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="scripted-upstream")
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """What the gateway's ``openai`` provider is given as its base URL."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What the gateway's ``anthropic`` provider is given (it appends ``/v1/messages``)."""
        return f"{self.url}/anthropic"

    def play(self, *answers: Answer) -> Upstream:
        """Queue ``answers``, each for the next request to its API's completion route."""
        with self._lock:
            for answer in answers:
                self._queues[answer.api].append(answer)
        return self

    def reset(self) -> None:
        """Forget queued answers and received requests (between tests)."""
        with self._lock:
            for queue in self._queues.values():
                queue.clear()
            self._received.clear()
            self._signed.clear()

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def calls(self, api: API = "openai") -> list[Received]:
        """The requests to ``api``'s completion route, oldest first."""
        route = next(path for (_, path), name in ROUTES.items() if name == api)
        return [r for r in self.received if r.method == "POST" and r.path == route]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- serving (handler threads) ---------------------------------------------------------

    def _answer(self, received: Received) -> Played:
        with self._lock:
            self._received.append(received)
            api = ROUTES.get((received.method, received.path))
            refused = self._checks[api](received.body) if api in self._checks else None
            if refused is None:
                refused = _refusal(api, received, self._signed)
            answer = self._queues[api].popleft() if api and self._queues[api] and refused is None else None
            self._signed.update(getattr(answer, "signed", {}))
        if refused is not None:
            return refused
        if received.method == "POST" and received.path == COUNT_ROUTE:
            return _count(received.body)
        if api is not None:
            if answer is None:
                return _not_scripted(f"no answer queued for {received.method} {received.path}")
            return answer.play(received.body if isinstance(received.body, Mapping) else {})
        if received.method == "GET" and received.path == "/v1/models":
            return self._models["openai"].play({})
        if received.method == "GET" and received.path.startswith("/v1/models/"):
            return self._models["openai"].one(unquote(received.path.removeprefix("/v1/models/")))
        if received.method == "GET" and received.path == "/anthropic/v1/models":
            return self._models["anthropic"].play({})
        return _not_scripted(f"the scripted upstream has no route {received.method} {received.path}", 404)


def _refusal(api: API | None, received: Received, signed: Mapping[str, str]) -> Played | None:
    """The Messages API's 400 for a body it refuses (``providers._anthropic_api``), or None."""
    if received.method != "POST" or (api != "anthropic" and received.path != COUNT_ROUTE):
        return None
    fault = count_fault(received.body) if received.path == COUNT_ROUTE else messages_fault(received.body, signed)
    if fault is None:
        return None
    body = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": fault}}).encode()
    return Played(400, (("content-type", "application/json"),), (body,), streamed=False)


def _count(body: Any) -> Played:
    """A count of the body's input tokens: about four characters a token, so a test can work it out too."""
    counted = {key: body[key] for key in ("system", "messages", "tools") if key in body}
    payload = json.dumps({"input_tokens": counted_tokens(counted)}).encode()
    return Played(200, (("content-type", "application/json"),), (payload,), streamed=False)


def counted_tokens(counted: Mapping[str, Any]) -> int:
    """What the scripted ``count_tokens`` answers for these fields."""
    return 1 + len(json.dumps(counted, sort_keys=True)) // 4


def _not_scripted(message: str, status: int = 500) -> Played:
    """A loud answer for a request no test expected (OpenAI's error shape, so any client reads it)."""
    body = json.dumps({"error": {"message": f"scripted upstream: {message}", "type": "scripted_upstream",
                                 "param": None, "code": None}}).encode()
    return Played(status, (("content-type", "application/json"),), (body,), streamed=False)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        received = Received(self.command, urlsplit(self.path).path,
                            {k.lower(): v for k, v in self.headers.items()}, body)
        played = self.server.owner._answer(received)
        try:
            self._write(played)
        except OSError:  # the gateway hung up (a cancel, a client gone): nothing left to answer
            self.close_connection = True

    def _write(self, played: Played) -> None:
        self.send_response(played.status)
        for name, value in played.headers:
            self.send_header(name, value)
        if played.streamed:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(sum(len(p) for p in played.parts)))
        self.end_headers()
        for part in played.parts:
            if played.streamed:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            else:
                self.wfile.write(part)
        if played.streamed:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: Upstream

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A gateway that hangs up (cancels, pooled connections closed at exit) is expected.
        if not isinstance(sys.exc_info()[1], (OSError, socket.timeout)):
            super().handle_error(request, client_address)
