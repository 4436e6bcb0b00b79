"""``check_plugin(kind="provider")``'s second half: the provider exercised through its ``using(...)`` seam.

A provider that takes injected httpx clients (a classmethod ``using(client=...,
async_client=...)``) is sent canned answers through an ``httpx.MockTransport`` and
asked as a request asks; nothing leaves the process. Each case checks what the rest
of agent-core counts on, and a miss names the fix:

* a 200 answer, streamed (``samples["streamed"]``, the body as the API streams it)
  and not (``samples["answer"]``): the request finishes with an answer;
* a 429 with ``retry-after: 7``: a ``RateLimitError`` whose ``retry_after`` is 7;
* a 500: a typed, retryable error carrying the API's account (``upstream.status``
  500, which ``agent-core serve`` repeats to its client);
* a 401: an ``AuthenticationError``;
* a stream cut after its first part: a typed error, not a ``PluginError``;
* a cancel while the stream waits: outcome ``stopped``/``cancelled``;
* the streamed answer as two provider calls of one request: the same finals twice
  (:func:`~agent_core.testing.request_checks.same_finals_twice`).

The 200 cases, the cut and the cancel need the sample bodies; the failures need none.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from .. import AgentCore, Message
from ..errors import AuthenticationError, LLMError, PluginContractError, PluginError, RateLimitError
from .harness import PluginHarness
from .replay import recorded_reply
from .request_checks import same_finals_twice

__all__ = ["exercise_provider"]

_ERROR_BODY = b'{"error": {"message": "canned failure", "type": "canned_error", "code": "canned"}}'
_HOW = ("build it with agent_core_providers.failures.raise_for(response, provider) (or error_for), and wrap "
        "sending and reading in agent_core_providers.failures.translated(provider)")


class _Canned:
    """The transport's next answer: status, headers and body parts (a part that is an exception is raised)."""

    def __init__(self) -> None:
        self.status, self.headers, self.parts = 200, {}, [b""]
        self.first_sent = threading.Event()  # the stream's first part is out
        self.go_on = threading.Event()  # the rest may follow

    def set(self, status: int, headers: Mapping[str, str], *parts: Any) -> None:
        self.status, self.headers, self.parts = status, dict(headers), list(parts)
        self.first_sent.clear()
        self.go_on.set()

    def body(self) -> Iterator[bytes]:
        for i, part in enumerate(self.parts):
            if i == 1:
                self.first_sent.set()
                self.go_on.wait(10)
            if isinstance(part, BaseException):
                raise part
            yield part
        self.first_sent.set()

    def answer(self, request: httpx.Request) -> httpx.Response:
        parts = self.body()
        return httpx.Response(self.status, headers=self.headers, stream=_Stream(parts))

    async def aanswer(self, request: httpx.Request) -> httpx.Response:
        return self.answer(request)


class _Stream(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, parts: Iterator[bytes]) -> None:
        self.parts = parts

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts

    async def __aiter__(self) -> Any:
        for part in self.parts:
            yield part


def _halves(body: bytes) -> tuple[bytes, bytes]:
    """``body`` cut after its first frame (an SSE event or a line), for the cut and the cancel."""
    for sep in (b"\n\n", b"\n"):
        at = body.find(sep)
        if 0 <= at < len(body) - len(sep):
            return body[: at + len(sep)], body[at + len(sep):]
    return body, b""


def _as_bytes(sample: Any) -> bytes:
    return sample if isinstance(sample, bytes) else str(sample).encode()


class _Exercise:
    def __init__(self, cls: type, name: str, config: Mapping[str, Any]) -> None:
        self.name, self.canned = name, _Canned()
        self.provider = cls.using(client=httpx.Client(transport=httpx.MockTransport(self.canned.answer)),
                                  async_client=httpx.AsyncClient(transport=httpx.MockTransport(self.canned.aanswer)))
        self.given = dict(config)
        self.config = {**self.given, "provider": name}

    def fail(self, rule: str, value: Any = None) -> PluginContractError:
        return PluginContractError(self.name, "stream_api / call_api", rule, value)

    def ask(self, stream: bool, core: AgentCore | None = None, request_id: str | None = None) -> list[Any]:
        core = core or AgentCore(providers=[self.provider])
        session = core.add_message(core.create_session(), Message(role="user", content="hello"))
        return list(core.stream_request(session, {**self.config, "stream": stream}, request_id=request_id))

    def error_of(self, stream: bool, what: str) -> LLMError:
        core = AgentCore(providers=[self.provider])
        session = core.add_message(core.create_session(), Message(role="user", content="hello"))
        try:
            core.request(session, {**self.config, "stream": stream})
        except LLMError as exc:
            return exc
        except PluginError as exc:
            raise self.fail(f"{what}: raised {type(exc.original).__name__} ({exc.original}), untyped; {_HOW}") from exc
        raise self.fail(f"{what}: the request finished as if the API had answered")

    def answers(self, body: bytes, stream: bool) -> None:
        content_type, served = recorded_reply(body, self.name)
        self.canned.set(200, {"content-type": content_type}, served)
        done = self.ask(stream)[-1]
        if done.outcome.status != "finished" or not done.final_messages:
            raise self.fail(f"a 200 answer{' streamed' if stream else ''} did not finish with a final message",
                            {"outcome": str(done.outcome)})

    def failures(self, stream: bool) -> None:
        json = {"content-type": "application/json"}
        self.canned.set(429, {**json, "retry-after": "7"}, _ERROR_BODY)
        err = self.error_of(stream, "a 429")
        if not isinstance(err, RateLimitError):
            raise self.fail(f"a 429 became {type(err).__name__}, not RateLimitError; {_HOW}")
        if err.retry_after != 7:
            raise self.fail(f"a 429 with retry-after: 7 gave retry_after={err.retry_after!r}; pass the header's "
                            f"seconds as RateLimitError(retry_after=...), or {_HOW}")
        self.canned.set(500, json, _ERROR_BODY)
        err = self.error_of(stream, "a 500")
        if not err.retryable or getattr(err.upstream, "status", None) != 500:
            raise self.fail(f"a 500 became {type(err).__name__} (retryable={err.retryable}, upstream="
                            f"{err.upstream!r}): it should be retryable and carry upstream=UpstreamDetail(status=500,"
                            f" ...), which agent-core serve passes on to its client; {_HOW}")
        self.canned.set(401, json, _ERROR_BODY)
        err = self.error_of(stream, "a 401")
        if not isinstance(err, AuthenticationError):
            raise self.fail(f"a 401 became {type(err).__name__}, not AuthenticationError; {_HOW}")

    def cut(self, body: bytes) -> None:
        content_type, served = recorded_reply(body, self.name)
        first, _ = _halves(served)
        self.canned.set(200, {"content-type": content_type}, first, httpx.RemoteProtocolError("peer closed"))
        self.error_of(True, "a stream cut after its first part")

    def twice(self, body: bytes) -> None:
        content_type, served = recorded_reply(body, self.name)
        h = PluginHarness(self.provider, self.given, kind="provider")

        def chunks(native: Any, state: Any) -> list[Any]:
            self.canned.set(200, {"content-type": content_type}, served)
            return list(h.call("stream_api", native, state))

        same_finals_twice(h, chunks)

    def cancel(self, body: bytes) -> None:
        content_type, served = recorded_reply(body, self.name)
        first, rest = _halves(served)
        self.canned.set(200, {"content-type": content_type}, first, rest)
        self.canned.go_on.clear()
        events: list[Any] = []
        core = AgentCore(providers=[self.provider])
        worker = threading.Thread(target=lambda: events.extend(self.ask(True, core, "check-cancel")), daemon=True)
        worker.start()
        self.canned.first_sent.wait(10)
        cancelled = core.cancel_request("check-cancel")
        self.canned.go_on.set()
        worker.join(10)
        done = events[-1] if events else None
        if not cancelled or done is None or (done.outcome.status, done.outcome.reason) != ("stopped", "cancelled"):
            raise self.fail("a request cancelled while the stream waited did not end stopped/cancelled",
                            None if done is None else {"outcome": str(done.outcome)})


def exercise_provider(cls: type, name: str, config: Mapping[str, Any], samples: Mapping[str, Any]) -> None:
    """Run the cases of the module docstring against ``cls`` (a provider class with ``using``).

    Raises:
        PluginContractError: naming the provider, the case and the fix.
    """
    run = _Exercise(cls, name, config)
    streamed, answer = samples.get("streamed"), samples.get("answer")
    if streamed is not None:
        run.answers(_as_bytes(streamed), True)
    if answer is not None:
        run.answers(_as_bytes(answer), False)
    for stream in [m for m, body in ((True, streamed), (False, answer)) if body is not None] or [True]:
        run.failures(stream)
    if streamed is not None:
        run.cut(_as_bytes(streamed))
        run.cancel(_as_bytes(streamed))
        run.twice(_as_bytes(streamed))
