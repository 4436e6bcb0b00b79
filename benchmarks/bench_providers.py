"""Per-chunk cost of our HTTP providers against other clients, on the same loopback streams.

    .venv/bin/python benchmarks/bench_providers.py            # httpx + ours only
    python3 -m venv /tmp/benchenv && /tmp/benchenv/bin/pip install -q -e . openai anthropic litellm
    /tmp/benchenv/bin/python benchmarks/bench_providers.py    # every client
    .venv/bin/python benchmarks/bench_providers.py --quick    # 300 chunks, one run: does it work?
    .venv/bin/python benchmarks/bench_providers.py --profile openai   # cProfile of our path

The official SDKs and LiteLLM are never dependencies of agent-core: install them in the
benchmark's own environment as above. A client whose package is missing is skipped, and
the table says so.

How it measures
---------------
A server in a separate process (this file with ``--serve``) answers every streaming request
with the same stream: ``--chunks`` text deltas as OpenAI Chat Completions SSE
(``/v1/chat/completions``) or Anthropic Messages SSE (``/v1/messages``), with the events a
real API sends around them (role chunk, finish chunk, usage, ``[DONE]``; ``message_start``
... ``message_stop``). Each event is one chunked-encoding write with ``TCP_NODELAY``, so
the client sees the stream arrive event by event, as fast as it can take it; there is no
sleep. A request that does not ask for a stream gets a 400, so no client can take a
shortcut.

Each client runs in its own worker process (this file with ``--worker``), so imports,
background threads and memory of one client never touch another, and ``time.process_time``
counts only the client's own CPU (the server's is in the other process). A worker warms up
with one full stream (imports, connection, caches), then the parent asks the workers in
turn, round after round, for one timed stream each; the table shows the median over the
rounds of CPU and wall microseconds per chunk, and the ratio to the httpx + ``json.loads``
client on the same stream. Peak memory is ``tracemalloc``'s peak during one extra stream
(Python allocations made while streaming) and the worker's maximum RSS (imports included).

Every client's accumulated text is compared with the text the server sent; a client that
gets it wrong fails the run. Ours must also finish with outcome ``finished`` and a final
message holding the whole text.

The clients
-----------
* ``httpx``: ``httpx.Client.stream`` + ``iter_lines`` + ``json.loads`` of each ``data:`` line,
  the hand-written baseline.
* ``httpx+our-sse``: ``httpx`` ``iter_bytes`` + our SSE reader and msgspec
  (``agent_core_providers._sse``), no provider, no engine: the floor of our transport.
* ``provider-loop``: our provider's own hooks in a bare loop (``init`` ...
  ``stream_api`` + ``process_chunk`` ... ``finalize``), no engine, no extension: what the
  provider costs by itself. With the row above, it splits our cost into transport,
  provider, and engine + extensions.
* ``agent-core``: ``AgentCore.stream_request`` with our ``openai`` (``openai_tools``,
  ``openai_reasoning``) or ``anthropic`` (``anthropic_tools``, ``anthropic_thinking``, off
  without a budget) provider and 3 pass-through extensions, collecting partials' text.
* ``openai-sdk`` / ``anthropic-sdk``: ``chat.completions.create(stream=True)`` /
  ``messages.create(stream=True)``, iterating the typed chunks/events (the cheapest way
  each SDK streams: no accumulating helper).
* ``litellm``: ``litellm.completion(stream=True)`` with ``openai/...`` and
  ``anthropic/...`` models and ``api_base`` at the loopback server.

Figures from this 2-core machine are noisy (other jobs share it): compare the ratios,
which come from one run with the clients interleaved, not the absolute microseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any

FORMATS = ("openai", "anthropic")
#: client name -> the formats it speaks, in table order
CLIENTS: dict[str, tuple[str, ...]] = {
    "httpx": FORMATS,
    "httpx+our-sse": FORMATS,
    "provider-loop": FORMATS,
    "agent-core": FORMATS,
    "openai-sdk": ("openai",),
    "anthropic-sdk": ("anthropic",),
    "litellm": FORMATS,
}
BASELINE = "httpx"
MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
API_KEY = "bench-not-a-secret"
PROMPT = [{"role": "user", "content": "Count."}]
ROUTES = {"anthropic": "/messages", "openai": "/chat/completions"}  # format by the request path's end
PROTOCOL = "@@ "  # worker answers start with this; anything else a library prints is ignored


# -- the streams ---------------------------------------------------------------------------


def token(i: int) -> str:
    """The text of delta ``i``: short and different from its neighbours, like real tokens."""
    return f" t{i}"


def expected_text(chunks: int) -> str:
    return "".join(token(i) for i in range(chunks))


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, bytes) else json.dumps(data, separators=(",", ":")).encode()
    return (f"event: {event}\n".encode() if event else b"") + b"data: " + payload + b"\n\n"


def openai_events(chunks: int) -> list[bytes]:
    """A Chat Completions stream as OpenAI sends it (with ``stream_options.include_usage``)."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1718000000, "model": MODEL["openai"]}
    head["system_fingerprint"] = "fp_bench"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": token(i)}) for i in range(chunks)]
    events.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 9, "completion_tokens": chunks, "total_tokens": 9 + chunks}
    events.append(_sse({**head, "choices": [], "usage": usage}))
    events.append(_sse(b"[DONE]"))
    return events


def anthropic_events(chunks: int) -> list[bytes]:
    """A Messages stream of one text block as Anthropic sends it."""
    message = {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL["anthropic"], "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    events = [
        _sse({"type": "message_start", "message": message}, "message_start"),
        _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
             "content_block_start"),
    ]
    events += [
        _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token(i)}},
             "content_block_delta")
        for i in range(chunks)
    ]
    events += [
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
              "usage": {"output_tokens": chunks}}, "message_delta"),
        _sse({"type": "message_stop"}, "message_stop"),
    ]
    return events


# -- the server (a separate process) -------------------------------------------------------


def _framed(events: list[bytes]) -> list[bytes]:
    """Each event as one chunk of chunked transfer encoding, framed once up front."""
    return [b"%x\r\n%s\r\n" % (len(e), e) for e in events]


def _respond(conn: socket.socket, status: str, body: bytes) -> None:
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    conn.sendall(head.encode() + body)


def _serve_connection(conn: socket.socket, streams: dict[str, list[bytes]]) -> None:
    """Keep-alive HTTP/1.1: read a request, stream the format its path asks for, repeat."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            path = request_line.split(" ")[1].split("?")[0]
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
            length = int(headers.get("content-length") or 0)
            while len(buf) < length:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            body, buf = buf[:length], buf[length:]
            kind = next((k for k, suffix in ROUTES.items() if path.endswith(suffix)), None)
            try:
                asked_stream = json.loads(body).get("stream") is True
            except ValueError:
                asked_stream = False
            if kind is None:
                _respond(conn, "404 Not Found", b'{"error":{"message":"no such path"}}')
                continue
            if not asked_stream:
                _respond(conn, "400 Bad Request", b'{"error":{"message":"this server only streams"}}')
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for frame in streams[kind]:
                conn.sendall(frame)  # one write per event
            conn.sendall(b"0\r\n\r\n")


def serve(chunks: int) -> None:
    """Print the port, then serve both streams until stdin closes (the parent exited)."""
    streams = {"openai": _framed(openai_events(chunks)), "anthropic": _framed(anthropic_events(chunks))}
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=_guarded, args=(conn, streams), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(listener.getsockname()[1], flush=True)
    sys.stdin.read()


def _guarded(conn: socket.socket, streams: dict[str, list[bytes]]) -> None:
    try:
        _serve_connection(conn, streams)
    except OSError:
        pass  # a client that hangs up mid-stream


# -- the clients (one per worker process) --------------------------------------------------

#: A client: given the server URL and format, returns a function that streams once and
#: returns the accumulated text. Building it (imports, client objects) is not timed.
Runner = Callable[[], str]


def _endpoint(url: str, fmt: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """URL, JSON body and headers of the streaming request, as the hand-written clients send it."""
    if fmt == "openai":
        body = {"model": MODEL["openai"], "messages": PROMPT, "stream": True}
        return f"{url}/v1/chat/completions", body, {"authorization": f"Bearer {API_KEY}"}
    body = {"model": MODEL["anthropic"], "max_tokens": 4096, "messages": PROMPT, "stream": True}
    return f"{url}/v1/messages", body, {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}


def httpx_client(url: str, fmt: str) -> Runner:
    import httpx

    client = httpx.Client(timeout=60)
    endpoint, body, headers = _endpoint(url, fmt)

    def run_openai() -> str:
        parts: list[str] = []
        with client.stream("POST", endpoint, json=body, headers=headers) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    choices = json.loads(line[6:])["choices"]
                    if choices and (text := choices[0]["delta"].get("content")):
                        parts.append(text)
        return "".join(parts)

    def run_anthropic() -> str:
        parts: list[str] = []
        with client.stream("POST", endpoint, json=body, headers=headers) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                        parts.append(event["delta"]["text"])
        return "".join(parts)

    return run_openai if fmt == "openai" else run_anthropic


def sse_reader_client(url: str, fmt: str) -> Runner:
    """httpx ``iter_bytes`` + our SSE reader and msgspec, no provider, no engine: our transport's floor."""
    import httpx
    from agent_core_providers._sse import JSONEventReader

    client = httpx.Client(timeout=60)
    endpoint, body, headers = _endpoint(url, fmt)

    def run() -> str:
        parts: list[str] = []
        reader = JSONEventReader("bench", lambda name, value: None, done_data=b"[DONE]")
        with client.stream("POST", endpoint, json=body, headers=headers) as response:
            response.raise_for_status()
            for raw in response.iter_bytes():
                for event in reader.feed(raw):
                    if fmt == "openai":
                        choices = event["choices"]
                        if choices and (text := choices[0]["delta"].get("content")):
                            parts.append(text)
                    elif event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                        parts.append(event["delta"]["text"])
        return "".join(parts)

    return run


def provider_loop_client(url: str, fmt: str) -> Runner:
    """Our provider's own hooks in a bare loop (``stream_api`` + ``process_chunk``): no engine, no extension."""
    from agent_core import freeze
    from agent_core_providers.anthropic import AnthropicProvider
    from agent_core_providers.openai import OpenAIProvider

    provider = (OpenAIProvider if fmt == "openai" else AnthropicProvider)()
    _, _, config = agent_core_setup(url, fmt)
    config = freeze({k: v for k, v in config.items() if k != "provider"})
    context = freeze({"request_id": "bench", "stream": True, "config": config, "iteration": 0})
    messages = freeze(PROMPT)

    def run() -> str:
        state = freeze(provider.init(config))
        native = freeze(provider.to_native_messages(messages, state, context=context))
        native, state = map(freeze, provider.initialize_request(native, state, request_id="bench", context=context))
        parts: list[str] = []
        for chunk in provider.stream_api(native, state, request_id="bench"):
            partials, _, native, state = provider.process_chunk(chunk, native, state)
            parts.extend(p["content"] for p in partials)
        finals, _, _ = provider.finalize(native, state, context=context)
        text = "".join(parts)
        content = finals[0]["content"] if len(finals) == 1 else None
        if isinstance(content, (list, tuple)):  # Anthropic: the native message's content blocks
            content = "".join(block["text"] for block in content if block["type"] == "text")
        if content != text:
            raise RuntimeError(f"provider loop {fmt}: the final message is not the streamed text")
        return text

    return run


def _pass_through(n: int) -> type:
    """An extension that sees every chunk and changes nothing (what a logging plugin costs at least)."""

    def process_chunk(self: Any, chunk: Any, partials: Any, finals: Any, native_messages: Any, state: Any) -> tuple:
        return partials, finals, native_messages, state

    attributes = {"name": f"pass_through_{n}", "priority": 100 + n, "process_chunk": process_chunk}
    return type(f"PassThrough{n}", (), attributes)


def agent_core_setup(url: str, fmt: str) -> tuple[Any, Any, dict[str, Any]]:
    """The engine with both bundled providers, their extensions and 3 pass-throughs; session; config."""
    from agent_core import AgentCore, Message
    from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
    from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
    from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
    from agent_core_plugins.openai_tools import OpenAIToolsExtension
    from agent_core_providers.anthropic import AnthropicProvider
    from agent_core_providers.openai import OpenAIProvider

    core = AgentCore(
        providers=[OpenAIProvider, AnthropicProvider],
        extensions=[
            OpenAIToolsExtension, OpenAIReasoningExtension, AnthropicToolsExtension, AnthropicThinkingExtension,
            *(_pass_through(n) for n in (1, 2, 3)),
        ],
    )
    session = core.add_message(core.create_session(), Message(role="user", content=PROMPT[0]["content"]))
    base_url = f"{url}/v1" if fmt == "openai" else url
    config = {"provider": fmt, "base_url": base_url, "api_key": API_KEY, "model": MODEL[fmt], "max_retries": 0}
    return core, session, config


def agent_core_client(url: str, fmt: str) -> Runner:
    core, session, config = agent_core_setup(url, fmt)
    expected_plugins = {
        "openai": {"openai", "openai_tools", "openai_reasoning"},
        "anthropic": {"anthropic", "anthropic_tools"},
    }[fmt] | {"pass_through_1", "pass_through_2", "pass_through_3"}
    running = _running_plugins(core, config)
    if not expected_plugins <= running:
        raise RuntimeError(
            f"agent-core {fmt}: expected {sorted(expected_plugins)} to run, resolve() says {sorted(running)}"
        )

    def run() -> str:
        parts: list[str] = []
        done = None
        for event in core.stream_request(session, config):
            if event.type == "partial":
                parts.append(event.message.content)
            elif event.type == "error":
                raise RuntimeError(f"agent-core {fmt}: {event.message}")
            elif event.type == "done":
                done = event
        text = "".join(parts)
        if done is None or done.outcome.status != "finished":
            raise RuntimeError(f"agent-core {fmt}: the stream did not finish: {done and done.outcome}")
        final = done.session.messages[-1].content
        if final != text:
            raise RuntimeError(f"agent-core {fmt}: the final message ({len(final)} chars) is not the streamed text")
        return text

    return run


def _running_plugins(core: Any, config: dict[str, Any]) -> set[str]:
    """The provider and extensions ``resolve()`` says run for ``config``."""
    resolution = core.resolve(config)
    return {resolution.provider.name, *(ref.name for ref in resolution.extensions)}


def openai_sdk_client(url: str, fmt: str) -> Runner:
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key=API_KEY, max_retries=0)

    def run() -> str:
        parts: list[str] = []
        stream = client.chat.completions.create(model=MODEL["openai"], messages=PROMPT, stream=True)
        for chunk in stream:
            if chunk.choices and (text := chunk.choices[0].delta.content):
                parts.append(text)
        return "".join(parts)

    return run


def anthropic_sdk_client(url: str, fmt: str) -> Runner:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key=API_KEY, max_retries=0)

    def run() -> str:
        parts: list[str] = []
        stream = client.messages.create(model=MODEL["anthropic"], max_tokens=4096, messages=PROMPT, stream=True)
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        return "".join(parts)

    return run


def litellm_client(url: str, fmt: str) -> Runner:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
    import litellm

    litellm.telemetry = False
    model = f"{fmt}/{MODEL[fmt]}"
    api_base = f"{url}/v1" if fmt == "openai" else url

    def run() -> str:
        parts: list[str] = []
        response = litellm.completion(
            model=model, messages=PROMPT, api_base=api_base, api_key=API_KEY, stream=True, max_tokens=4096,
            max_retries=0,
        )
        for chunk in response:
            if chunk.choices and (text := chunk.choices[0].delta.content):
                parts.append(text)
        return "".join(parts)

    return run


BUILDERS: dict[str, Callable[[str, str], Runner]] = {
    "httpx": httpx_client,
    "httpx+our-sse": sse_reader_client,
    "provider-loop": provider_loop_client,
    "agent-core": agent_core_client,
    "openai-sdk": openai_sdk_client,
    "anthropic-sdk": anthropic_sdk_client,
    "litellm": litellm_client,
}
#: the package a client needs beyond agent-core's own dependencies
PACKAGES = {"openai-sdk": "openai", "anthropic-sdk": "anthropic", "litellm": "litellm"}


# -- a worker process: one client, driven over stdin/stdout --------------------------------


def _answer(out: IO[str], **fields: Any) -> None:
    out.write(PROTOCOL + json.dumps(fields) + "\n")
    out.flush()


def _checked(run: Runner, expected: str, name: str) -> None:
    text = run()
    if text != expected:
        at = next((i for i, (a, b) in enumerate(zip(text, expected)) if a != b), min(len(text), len(expected)))
        raise RuntimeError(
            f"{name}: accumulated {len(text)} chars, expected {len(expected)}; first difference at {at}: "
            f"{text[at:at + 20]!r} vs {expected[at:at + 20]!r}"
        )


def worker(client: str, fmt: str, url: str, chunks: int) -> None:
    """Build the client, warm up with one checked stream, then answer ``time`` / ``mem`` / ``quit``."""
    out = sys.stdout
    sys.stdout = sys.stderr  # a library that prints must not break the protocol
    name = f"{client} {fmt}"
    package = PACKAGES.get(client)
    if package is not None:
        import importlib.util

        if importlib.util.find_spec(package) is None:
            _answer(out, skip=f"{package} is not installed")
            return
    expected = expected_text(chunks)
    try:
        run = BUILDERS[client](url, fmt)
        _checked(run, expected, name)
    except Exception as exc:  # reported to the parent, which fails the run
        _answer(out, error=f"{name}: {type(exc).__name__}: {exc}")
        return
    _answer(out, ready=True)
    for command in sys.stdin:
        command = command.strip()
        try:
            if command == "time":
                cpu0, wall0 = time.process_time(), time.perf_counter()
                text = run()
                cpu1, wall1 = time.process_time(), time.perf_counter()
                if text != expected:
                    _checked(lambda: text, expected, name)
                _answer(out, cpu_us=(cpu1 - cpu0) / chunks * 1e6, wall_us=(wall1 - wall0) / chunks * 1e6)
            elif command == "mem":
                import resource
                import tracemalloc

                tracemalloc.start()
                base = tracemalloc.get_traced_memory()[0]
                _checked(run, expected, name)
                peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.stop()
                rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
                _answer(out, peak_kib=peak / 1024, rss_mib=rss_kib / 1024)
            else:
                return
        except Exception as exc:
            _answer(out, error=f"{name}: {type(exc).__name__}: {exc}")
            return


# -- the parent: server, workers, rounds, table ---------------------------------------------


class Worker:
    """One client in its own process."""

    def __init__(self, client: str, fmt: str, url: str, chunks: int, python: str) -> None:
        self.client, self.fmt = client, fmt
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", client, "--format", fmt, "--url", url,
             "--chunks", str(chunks)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        self.first: dict[str, Any] = {}  # set by the caller from read(): workers start side by side

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL):
                return json.loads(line[len(PROTOCOL):])
        self.log.seek(0)
        tail = self.log.read()[-2000:]
        return {"error": f"{self.client} {self.fmt}: the worker exited ({self.proc.wait()}):\n{tail}"}

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.read()
        if "error" in answer:
            raise SystemExit(f"FAILED {answer['error']}")
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def start_server(chunks: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", "--chunks", str(chunks)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    if not port.isdigit():
        raise SystemExit(f"the loopback server did not start ({proc.poll()})")
    return proc, f"http://127.0.0.1:{port}"


def measure(chunks: int, runs: int, clients: list[str], python: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of the table (one per client and format that ran) and the notes on skipped clients."""
    server, url = start_server(chunks)
    started: list[Worker] = []
    workers: list[Worker] = []
    skipped: list[str] = []
    try:
        # All workers import and warm up at once (on every core); the timed runs below take turns.
        for fmt, client in [(f, c) for f in FORMATS for c in clients if f in CLIENTS[c]]:
            started.append(Worker(client, fmt, url, chunks, python))
        for w in started:
            w.first = w.read()
            if "skip" in w.first:
                skipped.append(f"{w.client} ({w.fmt}): skipped, {w.first['skip']}")
            elif "error" in w.first:
                raise SystemExit(f"FAILED {w.first['error']}")
            else:
                workers.append(w)
        samples: dict[Worker, list[dict[str, Any]]] = {w: [] for w in workers}
        for _ in range(runs):  # interleaved, so a busy moment of the machine hits every client alike
            for w in workers:
                samples[w].append(w.ask("time"))
        rows = []
        for w in workers:
            mem = w.ask("mem")
            rows.append({
                "client": w.client, "format": w.fmt,
                "cpu_us": statistics.median(s["cpu_us"] for s in samples[w]),
                "wall_us": statistics.median(s["wall_us"] for s in samples[w]),
                **mem,
            })
        return rows, skipped
    finally:
        for w in started:
            w.close()
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    base = {r["format"]: r for r in rows if r["client"] == BASELINE}
    for r in rows:
        b = base.get(r["format"])
        r["cpu_x"] = r["cpu_us"] / b["cpu_us"] if b else None
        r["wall_x"] = r["wall_us"] / b["wall_us"] if b else None
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    def x(v: float | None) -> str:
        return f"{v:.2f}x" if v is not None else "-"

    lines = [
        "| format | client | CPU µs/chunk | wall µs/chunk | CPU vs httpx | wall vs httpx | peak KiB | max RSS MiB |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['format']} | {r['client']} | {r['cpu_us']:.1f} | {r['wall_us']:.1f} | {x(r['cpu_x'])} | "
            f"{x(r['wall_x'])} | {r['peak_kib']:,.0f} | {r['rss_mib']:.0f} |"
        )
    return "\n".join(lines)


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """Target 2, for the openai format: ours <= 0.9x httpx, and >= 7x faster than the SDK."""
    by = {(r["client"], r["format"]): r for r in rows}
    ours, base, sdk = by.get(("agent-core", "openai")), by.get(("httpx", "openai")), by.get(("openai-sdk", "openai"))
    lines = []
    if ours and base:
        for kind in ("cpu", "wall"):
            ratio = ours[f"{kind}_us"] / base[f"{kind}_us"]
            lines.append(f"target 2a ({kind}): agent-core openai / httpx = {ratio:.2f}x (goal <= 0.90x): "
                         f"{'met' if ratio <= 0.9 else 'MISSED'}")
    if ours and sdk:
        for kind in ("cpu", "wall"):
            ratio = sdk[f"{kind}_us"] / ours[f"{kind}_us"]
            lines.append(f"target 2b ({kind}): openai-sdk / agent-core openai = {ratio:.2f}x faster (goal >= 7x): "
                         f"{'met' if ratio >= 7 else 'MISSED'}")
    elif ours:
        lines.append("target 2b: not measured (the openai SDK is not installed here)")
    return lines


def profile(fmt: str, chunks: int, top: int) -> None:
    """cProfile one stream of our path (server in its own process, as in the table)."""
    import cProfile
    import pstats

    server, url = start_server(chunks)
    try:
        run = agent_core_client(url, fmt)
        _checked(run, expected_text(chunks), f"agent-core {fmt}")  # warm up
        profiler = cProfile.Profile()
        profiler.enable()
        _checked(run, expected_text(chunks), f"agent-core {fmt}")
        profiler.disable()
        stats = pstats.Stats(profiler)
        print(f"agent-core {fmt}, {chunks:,} chunks: share of the profiled time (tottime) by layer")
        for layer, seconds in _layers(stats):
            print(f"  {layer:<50}{seconds / stats.total_tt:>6.0%}")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(top)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


LAYERS = (  # (layer, path fragments), first match wins
    ("engine (core/agent_core)", ("/agent_core/",)),
    ("providers + SSE reader (agent_core_providers)", ("/agent_core_providers/",)),
    ("extensions (agent_core_plugins + pass-throughs)", ("/agent_core_plugins/", "bench_providers.py:process_chunk")),
    ("the benchmark's loop (collecting the text)", ("bench_providers.py",)),
    ("HTTP (httpx, httpcore, h11)", ("/httpx/", "/httpcore/", "/h11/")),
    ("msgspec, socket, built-ins", ("~",)),
)


def _layers(stats: Any) -> list[tuple[str, float]]:
    """Profiled time (tottime) summed by layer, largest first."""
    totals: dict[str, float] = {}
    for (filename, _, function), (_, _, tottime, _, _) in stats.stats.items():
        where = f"{filename}:{function}"
        layer = next((name for name, parts in LAYERS if any(p in where for p in parts)), "other (stdlib)")
        totals[layer] = totals.get(layer, 0.0) + tottime
    return sorted(totals.items(), key=lambda item: -item[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="text deltas per stream (default 20,000)")
    parser.add_argument("--runs", type=int, default=5, help="timed streams per client; the median is shown")
    parser.add_argument("--quick", action="store_true", help="300 chunks, one run: checks that every client works")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, from {', '.join(CLIENTS)}")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--profile", choices=FORMATS, help="cProfile one stream of agent-core in this format")
    parser.add_argument("--top", type=int, default=20, help="lines of --profile output")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=list(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--format", choices=FORMATS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks, args.runs = 300, 1
    if args.serve:
        serve(args.chunks)
        return 0
    if args.worker:
        worker(args.worker, args.format, args.url, args.chunks)
        return 0
    if args.profile:
        profile(args.profile, args.chunks, args.top)
        return 0
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        parser.error(f"unknown client(s) {', '.join(unknown)}; choose from {', '.join(CLIENTS)}")
    rows, skipped = measure(args.chunks, args.runs, clients, sys.executable)
    rows = with_ratios(rows)
    print(f"{args.chunks:,} chunks per stream, median of {args.runs} run(s), Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    print(table(rows))
    for note in skipped:
        print(note)
    for line in targets(rows):
        print(line)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
