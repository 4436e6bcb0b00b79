"""What the engine itself costs: per chunk on the hot path, per turn on the cold path.

    .venv/bin/python benchmarks/bench_engine.py            # the tables in docs/performance.md
    .venv/bin/python benchmarks/bench_engine.py --quick    # a smoke run (CI): small sizes, one run each
    .venv/bin/python benchmarks/bench_engine.py --otel     # the otel feature off and on (its own table)

Two tables, no network (the provider yields chunks from memory, so only the
engine is measured):

* **Engine overhead.** A provider whose ``process_chunk`` makes one partial per
  chunk, streamed through ``AgentCore.stream_request`` with 0, 1, 3 and 10
  pass-through extensions, against the bare loop ``for c in stream_api(...):
  process_chunk(c, ...)`` over the same chunks. Printed: microseconds per chunk
  of each, and the engine's overhead over the bare loop (median of several
  runs). Targets: at most 1.0 us with no extension, at most 0.25 us more per
  extension.
* **History.** The same stream (per chunk) and one turn with 4 tool calls (two
  provider calls, four tools run, four tool messages) on sessions of 10, 10,000
  and 100,000 stored messages whose native history is already stored; then one
  turn with 250, 500 and 1,000 tool calls. Targets: the 4-call turn at 100,000
  messages at most 2x the one at 10; calls cost O(calls).

With ``--otel``, only a third table: the same stream and the 4-call turn with the
``otel`` feature installed but off, then on with the API's no-op tracer (no SDK set
up), then on with the SDK recording every span into memory. Printed: us per chunk
and ms per turn, and each one's difference from the run without the feature.

Every variant's accumulated text (and tool message count) is checked, so no
variant can skip its work. Times are CPU time of this process (``time.process_time``), so other work on a shared machine
skews them less; still, compare ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Any

from agent_core import NATIVE_KEY, AgentCore, Message, Session
from agent_core.values.native_history import store_native

PASS_THROUGH_COUNTS = (0, 1, 3, 10)


class StreamProvider:
    """Yields ``chunks`` deltas; one partial per chunk; one final at the end."""

    name = "bench"
    chunks = 20_000

    def init(self, config):
        return {"config": config, "text": ""}

    def stream_api(self, native_messages, state, *, request_id=None):
        for _ in range(self.chunks):
            yield {"delta": "x"}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, state

    def finalize(self, native_messages, state, *, context=None):
        final = {"role": "assistant", "content": "done"}
        return [final], [*native_messages, final], state


def pass_through(i: int) -> type:
    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, finals, native_messages, state

    return type(f"PassThrough{i}", (), {"name": f"pass{i:02d}", "process_chunk": process_chunk})


def bare_loop_us(provider: StreamProvider, n: int) -> float:
    native: list[Any] = []
    state = provider.init({})
    text = []
    t0 = time.process_time()
    for c in provider.stream_api(native, state):
        partials, _, native, state = provider.process_chunk(c, native, state)
        text.append(partials[0]["content"])
    t1 = time.process_time()
    assert len(text) == n
    return (t1 - t0) / n * 1e6


def engine_us(core: AgentCore, session: Session, n: int) -> float:
    text = []
    t0 = time.process_time()
    for ev in core.stream_request(session):
        if ev.type == "partial":
            text.append(ev.message.content)
    t1 = time.process_time()
    assert len(text) == n and "".join(text) == "x" * n, "the engine lost chunks"
    return (t1 - t0) / n * 1e6


def overhead_table(chunks: int, runs: int) -> list[tuple[int, float, float, float]]:
    Provider = type("Provider", (StreamProvider,), {"chunks": chunks})
    session = Session("bench", [Message("user", "hi")])
    rows = []
    for k in PASS_THROUGH_COUNTS:
        core = AgentCore(providers=[Provider], extensions=[pass_through(i) for i in range(k)])
        core.request(session, {"stream": True})  # warm up
        bare, eng = [], []
        for _ in range(runs):
            gc.collect()
            bare.append(bare_loop_us(Provider(), chunks))
            eng.append(engine_us(core, session, chunks))
        b, e = statistics.median(bare), statistics.median(eng)
        rows.append((k, b, e, statistics.median(x - y for x, y in zip(eng, bare))))
    return rows


# -- history ---------------------------------------------------------------------


class ToolTurnProvider:
    """First call: ``calls`` tool calls; second call: a text answer. Streams a few chunks each."""

    name = "turns"
    calls = 4

    def init(self, config):
        return {"config": config, "text": ""}

    def to_native_messages(self, messages, state, *, context=None):
        return [{"role": m["role"], "content": m["content"], **({"metadata": m["metadata"]} if m.get("metadata") else {})}
                for m in messages]

    def stream_api(self, native_messages, state, *, request_id=None):
        for word in ("one ", "two ", "three"):
            yield {"delta": word}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, {
            **state, "text": state["text"] + chunk["delta"]}

    def finalize(self, native_messages, state, *, context=None):
        answered = native_messages and native_messages[-1].get("role") == "tool"
        meta = {} if answered else {"tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"i": i})}}
            for i in range(self.calls)
        ]}
        final = {"role": "assistant", "content": state["text"], "metadata": meta}
        return [final], [*native_messages, final], {**state, "text": ""}

    def from_native_messages(self, native_messages, state, *, context=None):
        return [{"role": m["role"], "content": m["content"], "metadata": m.get("metadata") or {}}
                for m in native_messages]


class Echo:
    name = "echo_tool"

    def get_tool_schemas(self, state, *, prepared=None):
        return [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]

    def execute_tool(self, tool_name, payload, state, **kw):
        return {"success": True, "result": payload["i"]}


def history_session(n: int) -> Session:
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(n)]
    return Session("bench", msgs)


def with_stored_native(core: AgentCore, provider: str, base: Session) -> Session:
    """``base`` as a second request finds it: its native history stored (and its prefix digests known).

    One request converts the whole history; its native messages for ``base``'s
    messages are then recorded on ``base`` itself, as the application's
    previous request would have left them.
    """
    warm = core.request(base, {"stream": True, "max_iterations": 1}).session
    native = warm.metadata[NATIVE_KEY][provider]["messages"][: len(base.messages)]
    return store_native(base, provider, native)


def timed_turn(core: AgentCore, session: Session, calls: int, config: dict[str, Any] | None = None) -> float:
    t0 = time.process_time()
    result = core.request(session, {"stream": True, **(config or {})})
    t1 = time.process_time()
    added = result.final_messages
    assert [m.role for m in added] == ["assistant", *["tool"] * calls, "assistant"], [m.role for m in added]
    assert added[-1].content == "one two three"
    return t1 - t0


def history_table(sizes: tuple[int, ...], chunk_runs: int, turn_runs: int) -> list[tuple[int, float, float]]:
    Stream = type("Stream", (StreamProvider,), {"chunks": 2_000})
    rows = []
    for n in sizes:
        base = history_session(n)
        core = AgentCore(providers=[Stream])
        session = with_stored_native(core, "bench", base)
        per_chunk = statistics.median(engine_us(core, session, 2_000) for _ in range(chunk_runs))
        tcore = AgentCore(providers=[ToolTurnProvider], tools=[Echo])
        tsession = with_stored_native(tcore, "turns", base)
        turn = statistics.median(timed_turn(tcore, tsession, 4) for _ in range(turn_runs))
        rows.append((n, per_chunk, turn * 1e3))
    return rows


def calls_table(counts: tuple[int, ...], runs: int) -> list[tuple[int, float]]:
    rows = []
    session = history_session(10)
    for calls in counts:
        Provider = type("Provider", (ToolTurnProvider,), {"calls": calls})
        core = AgentCore(providers=[Provider], tools=[Echo])
        rows.append((calls, statistics.median(timed_turn(core, session, calls) for _ in range(runs)) * 1e3))
    return rows


def otel_table(chunks: int, runs: int, turn_runs: int) -> list[tuple[str, float, float, int]]:
    """us per chunk and ms per 4-call turn without the otel feature, installed and off, on (no-op), on (SDK).

    The last column is the number of spans the SDK recorded per turn (0 without it), so a
    variant that made no span cannot pass for one that did.
    """
    from agent_core_features.otel import OtelFeature
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    exporter = InMemorySpanExporter()
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(exporter))
    Stream = type("Stream", (StreamProvider,), {"chunks": chunks})
    session = Session("bench", [Message("user", "hi")])
    variants = [("no otel", [], {}), ("otel off", [OtelFeature], {}),
                ("on, no-op", [OtelFeature], {"enabled_plugins": ["otel"]}),
                ("on, SDK", [OtelFeature.using(sdk)], {"enabled_plugins": ["otel"]})]
    rows = []
    for label, features, config in variants:
        core = AgentCore(providers=[Stream], features=features)
        tcore = AgentCore(providers=[ToolTurnProvider], features=features, tools=[Echo])

        def stream(core: AgentCore = core, config: dict[str, Any] = config) -> None:
            text = [ev.message.content for ev in core.stream_request(session, config) if ev.type == "partial"]
            assert "".join(text) == "x" * chunks, "the engine lost chunks"

        stream()  # warm up
        per_chunk = []
        for _ in range(runs):
            gc.collect()
            t0 = time.process_time()
            stream()
            per_chunk.append((time.process_time() - t0) / chunks * 1e6)
        exporter.clear()
        turns = [timed_turn(tcore, session, 4, config) for _ in range(turn_runs)]
        made = len(exporter.get_finished_spans()) // turn_runs
        rows.append((label, statistics.median(per_chunk), statistics.median(turns) * 1e3, made))
    return rows


def print_otel(chunks: int, runs: int, turn_runs: int) -> None:
    print(f"OpenTelemetry (otel feature; {chunks:,}-chunk stream, median of {runs}; "
          f"turn = 4 tool calls, median of {turn_runs})")
    print(f"{'variant':>10} {'us/chunk':>9} {'+us/chunk':>10} {'ms/turn':>8} {'+ms/turn':>9} {'spans':>6}")
    rows = otel_table(chunks, runs, turn_runs)
    _, c0, t0, _ = rows[0]
    for label, c, t, made in rows:
        print(f"{label:>10} {c:>9.3f} {c - c0:>+10.3f} {t:>8.3f} {t - t0:>+9.3f} {made:>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one run each (a smoke test)")
    ap.add_argument("--otel", action="store_true", help="only the otel feature's table (off, on no-op, on with the SDK)")
    args = ap.parse_args()
    if args.otel:
        print_otel(*((2_000, 1, 1) if args.quick else (20_000, 7, 21)))
        return
    if args.quick:
        chunks, runs, sizes, turn_runs, counts = 2_000, 1, (10, 1_000), 1, (10, 20)
    else:
        chunks, runs, sizes, turn_runs, counts = 20_000, 7, (10, 10_000, 100_000), 7, (250, 500, 1_000)

    print(f"Engine overhead ({chunks:,} chunks, median of {runs} runs; us per chunk)")
    print(f"{'extensions':>10} {'bare loop':>10} {'engine':>8} {'overhead':>9} {'per ext':>8}")
    rows = overhead_table(chunks, runs)
    base = rows[0][3]
    for k, b, e, o in rows:
        per_ext = f"{(o - base) / k:8.3f}" if k else f"{'-':>8}"
        print(f"{k:>10} {b:>10.3f} {e:>8.3f} {o:>9.3f} {per_ext}")
    verdicts = [verdict("1a", "engine overhead with no extension", base, 1.0, "us")]
    for k, _, _, o in rows[1:]:
        verdicts.append(verdict("1b", f"added per pass-through extension, {k} on", (o - base) / k, 0.25, "us"))
    print()
    print(f"History (stored native history; 2,000-chunk stream; turn = 4 tool calls, median of {turn_runs})")
    print(f"{'messages':>9} {'us/chunk':>9} {'ms/turn':>9} {'turn ratio':>11}")
    hrows = history_table(sizes, max(1, runs // 2), turn_runs)
    for n, c, t in hrows:
        print(f"{n:>9,} {c:>9.3f} {t:>9.2f} {t / hrows[0][2]:>11.2f}")
    n, _, t = hrows[-1]
    verdicts.append(verdict("3a", f"4-call turn at {n:,} messages / at {hrows[0][0]:,}", t / hrows[0][2], 2.0, "x"))
    print()
    print(f"Tool calls in one turn (10 messages of history, median of {turn_runs})")
    print(f"{'calls':>6} {'ms/turn':>9} {'ms/call':>8}")
    crows = calls_table(counts, turn_runs)
    for calls, t in crows:
        print(f"{calls:>6,} {t:>9.1f} {t / calls:>8.3f}")
    (c0, t0), (c1, t1) = crows[0], crows[-1]
    # O(calls): the cost per call may not grow with the number of calls (1.5x allows for noise)
    verdicts.append(verdict("3b", f"ms per call at {c1:,} calls / at {c0:,}", (t1 / c1) / (t0 / c0), 1.5, "x"))
    print()
    for line in verdicts:
        print(line)


def verdict(target: str, what: str, value: float, goal: float, unit: str) -> str:
    """One line saying whether one of the engine's targets (docs/performance.md) is met in this run."""
    status = "met" if value <= goal else "MISSED"
    return f"target {target}: {what} = {value:.3f} {unit} (goal <= {goal:g} {unit}): {status}"


if __name__ == "__main__":
    main()
