"""Session store: the cost of saving one turn at 10 vs 100,000 messages, and of loading 100,000.

For each backend (SQLite in a temp dir; PostgreSQL at ``--postgres URL``, or
a throwaway server started like the tests do when the server binaries are
installed), builds a session of N messages whose native history the engine
has built (echo provider), stores it, then runs turns the way a handler does:
request (not timed), ``put`` at the loaded revision (timed). Prints the median
save time per N and the ratio 100,000 / 10, then the time and the Python
memory (tracemalloc peak) of one ``get`` of the 100,000-message session.

Then what a whole turn costs over the same steps written by hand: ``run_turn``
(and ``stream_turn``, drained) against ``get``, ``request`` (``stream_request``)
and ``put`` called one after the other on a short session, interleaved, on a
store in a dict (the turn's own cost, which a disk write would hide) and on
SQLite; the ratio is what driving the turn as a generator of effects adds.

Run: ``.venv/bin/python benchmarks/bench_store.py [--postgres URL] [--rounds 30] [--only turn]``.
The figures are quoted in ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Self

from agent_core import AgentCore, Message, Session
from agent_core.errors import ConflictError, SessionNotFoundError
from agent_core.store import Stored, open_store, run_turn, stream_turn
from agent_core_providers.echo import EchoProvider

ECHO = {"provider": "echo"}
SIZES = (10, 100_000)


def grown(core: AgentCore, n: int, sid: str) -> Session:
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"message {i}: " + "lorem ipsum " * 8) for i in range(n - 2)]
    return core.request(Session(sid, [*msgs, Message("user", "last question")]), ECHO).session


class Handler:
    """One session of N messages in its own database, saved turn after turn as a handler would."""

    def __init__(self, core: AgentCore, url: str, n: int) -> None:
        self.core, self.store = core, open_store(url)
        self.store.create(grown(core, n, "bench"))
        stored = self.store.get("bench")
        self.session, self.revision, self.times = stored.session, stored.revision, []

    def turn(self, i: int, timed: bool = True) -> None:
        self.session = self.core.request(self.session.with_message(Message("user", f"turn {i}")), ECHO).session
        gc.collect()  # the request's garbage is the request's cost, not the save's
        start = time.perf_counter()
        self.revision = self.store.put(self.session, expected_revision=self.revision)
        if timed:
            self.times.append(time.perf_counter() - start)


def bench(name: str, fresh_url: Callable[[str], str], rounds: int) -> None:
    core = AgentCore(providers=[EchoProvider])
    handlers = {n: Handler(core, fresh_url(f"n{n}"), n) for n in SIZES}
    for i in range(5):  # warm up: caches, prepared statements, the checkpoint after the bulk insert
        for h in handlers.values():
            h.turn(i, timed=False)
    for i in range(rounds):  # interleaved, so drifting machine load hits both sizes alike
        for h in handlers.values():
            h.turn(i)
    medians = {n: statistics.median(h.times) for n, h in handlers.items()}
    for n in SIZES:
        print(f"{name:10s} save one turn at {n:>7,} messages: {medians[n] * 1e3:7.2f} ms (median of {rounds})")
    print(f"{name:10s} ratio {SIZES[1]:,} / {SIZES[0]}: {medians[SIZES[1]] / medians[SIZES[0]]:.2f}x")
    big = handlers[SIZES[1]].store
    loads = []
    for _ in range(3):
        start = time.perf_counter()
        big.get("bench")
        loads.append(time.perf_counter() - start)
    tracemalloc.start()
    big.get("bench")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{name:10s} load {SIZES[1]:,} messages: {statistics.median(loads) * 1e3:.0f} ms, "
          f"peak {peak / 2**20:.0f} MB of Python memory")
    for h in handlers.values():
        h.store.close()


def _timed(fn: Callable[..., object], *args: object) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _by_hand(core: AgentCore, store: object, text: str, streamed: bool) -> None:
    stored = store.get("turn")  # type: ignore[attr-defined]
    asked = stored.session.with_message(Message("user", text))
    if streamed:
        session = [e for e in core.stream_request(asked, ECHO)][-1].session
    else:
        session = core.request(asked, ECHO).session
    store.put(session, expected_revision=stored.revision)  # type: ignore[attr-defined]


class MemoryStore:
    """Sessions in a dict: the turn's own cost, with no disk write to hide it."""

    def __init__(self) -> None:
        self.sessions: dict[str, Stored] = {}

    def get(self, session_id: str) -> Stored:
        if session_id not in self.sessions:
            raise SessionNotFoundError(session_id)
        return self.sessions[session_id]

    def put(self, session: Session, *, expected_revision: int) -> int:
        current = self.sessions[session.session_id].revision if session.session_id in self.sessions else 0
        if current != expected_revision:
            raise ConflictError(session.session_id, expected=expected_revision, current=current)
        self.sessions[session.session_id] = Stored(session, current + 1)
        return current + 1

    def create(self, session: Session) -> int:
        return self.put(session, expected_revision=0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def bench_turn(name: str, url: str | None, rounds: int) -> None:
    """A turn through ``run_turn`` / ``stream_turn`` against its steps by hand, on one short session."""
    core = AgentCore(providers=[EchoProvider])
    times: dict[str, list[float]] = {"by hand": [], "run_turn": [], "streamed by hand": [], "stream_turn": []}
    with open_store(url) if url else MemoryStore() as store:
        run_turn(core, store, "turn", "hello", ECHO)
        for i in range(5 + rounds):  # the first 5 warm up
            timed = {
                "by hand": _timed(_by_hand, core, store, f"hand {i}", False),
                "run_turn": _timed(run_turn, core, store, "turn", f"turn {i}", ECHO),
                "streamed by hand": _timed(_by_hand, core, store, f"hand {i}", True),
                "stream_turn": _timed(list, stream_turn(core, store, "turn", f"turn {i}", ECHO)),  # lazy until drained
            }
            for key, value in timed.items():
                if i >= 5:
                    times[key].append(value)
    medians = {k: statistics.median(v) for k, v in times.items()}
    for k, v in medians.items():
        print(f"{name:10s} {k:16s}: {v * 1e3:6.2f} ms (median of {rounds})")
    print(f"{name:10s} run_turn / by hand: {medians['run_turn'] / medians['by hand']:.3f}x, "
          f"stream_turn / by hand: {medians['stream_turn'] / medians['streamed by hand']:.3f}x")


def _schema_url(url: str, tag: str) -> str:
    """A fresh schema per size in one PostgreSQL database."""
    import psycopg

    schema = f"bench_{tag}_{time.time_ns()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="postgresql:// URL (default: start a throwaway server if possible)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", choices=["save", "turn"], help="only the saves at two sizes, or only the turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "turn":
            bench("sqlite", lambda tag: f"sqlite:///{tmp}/{tag}.db", args.rounds)
        if args.only != "save":
            bench_turn("memory", None, args.rounds * 10)
            bench_turn("sqlite", f"sqlite:///{tmp}/turn.db", args.rounds)
    if args.only == "turn":
        return
    if args.postgres:
        bench("postgresql", lambda tag: _schema_url(args.postgres, tag), args.rounds)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "store"))
    from _postgres import PostgresServer, find_bin_dir  # the tests' throwaway server

    bin_dir = find_bin_dir()
    if bin_dir is None:
        print("postgresql: skipped (no server binaries; pass --postgres URL)")
        return
    server = PostgresServer(bin_dir)
    server.start()
    try:
        bench("postgresql", lambda tag: _schema_url(server.url(), tag), args.rounds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
