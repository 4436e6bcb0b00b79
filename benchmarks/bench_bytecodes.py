"""Bytecodes the interpreter runs for a paced chunk and for a request, by function: a profile noise cannot move.

    .venv/bin/python benchmarks/bench_bytecodes.py                    # this tree: a paced chunk, then a request
    .venv/bin/python benchmarks/bench_bytecodes.py --top 40           # more functions in each list
    .venv/bin/python benchmarks/bench_bytecodes.py --tree /tmp/before # another checkout too, for a before/after pair
    .venv/bin/python benchmarks/bench_bytecodes.py --instructions 400 --tree /tmp/before  # the verdict: callgrind

Why bytecodes: CPython's evaluation loop is the largest single cost of a paced chunk under
callgrind (about 37% of its instructions, 26 instructions a bytecode), and what the loop runs
is decided by our code alone. Counted with ``sys.settrace`` and ``f_trace_opcodes``, a
function's figure comes out the same, within a few bytecodes, in every run on any machine
(a read that happens to split differently moves it that much), so a cut of a few bytecodes
shows, and the list says where the rest go. What it does not see: C code (msgspec, uvloop,
the socket calls), which ``--instructions`` in ``bench_relay.py`` counts with the rest.

Measured through the app ``agent-core serve`` builds (``bench_setup.py``'s ASGI call, its
upstream), on one stream:

- **a paced chunk**: a stream of 110 tokens less one of 10, over 100, with the upstream
  pausing 2 ms between tokens, so each token arrives in a read of its own, as a model's do;
- **a request**: one streamed request of one token (the role chunk, the token, the finish and
  the usage chunk, ``[DONE]``) after 30 of the same.

Each function is ``file:line:name`` under its package; the parts sum what each package's
files ran. Each tree runs in a process of its own.

Fewer bytecodes is not always less work: a check moved into C still costs its C. So
``--instructions N`` gives the verdict instead, under callgrind (``valgrind``, the hash seed
fixed; within 0.3 % from run to run): the instructions of a paced chunk (a stream of N + 10
tokens less one of 10, the upstream pausing 20 ms, over N) and of a streamed and a
non-streamed request of one token (110 after 20 of warm-up, less 10, over 100), the whole
process, C included; then a paced chunk in a real ``agent-core serve`` (the server under
callgrind, one stream of N + 10 tokens less one of 10 from an HTTP client, after two short
ones): the same figure with uvicorn's connection in place of the stand-in the app call
offers (within about 1.5 % from run to run: a server's loop turns vary).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gateway import tree_env  # noqa: E402 - the benchmarks folder is not a package


def _where(path: str) -> str:
    """A code object's file, from its package down (``core/agent_core/...``, ``starlette/...``)."""
    for mark in ("site-packages/", "/core/agent_core/", "/providers/agent_core_providers/",
                 "/plugins/agent_core_plugins/", "/features/agent_core_features/", "/benchmarks/"):
        at = path.find(mark)
        if at >= 0:
            return path[at + 1:] if mark.startswith("/") and mark != "site-packages/" else path[at + len(mark):]
    return re.sub(r"^.*/lib/python3\.\d+/", "stdlib/", path)


class Census:
    """Bytecodes run while on, by ``file:line:name`` of the code that ran them."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def _trace(self, frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        code = frame.f_code
        key = f"{_where(code.co_filename)}:{code.co_firstlineno}:{code.co_name}"
        counts = self.counts

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return local

        return local

    async def around(self, run: Any) -> dict[str, int]:
        self.counts.clear()
        sys.settrace(self._trace)
        try:
            await run
        finally:
            sys.settrace(None)
        return dict(self.counts)


def _less(more: dict[str, int], fewer: dict[str, int], over: int) -> dict[str, float]:
    return {k: (more.get(k, 0) - fewer.get(k, 0)) / over for k in more.keys() | fewer.keys()}


def worker(tokens: int, short: int) -> None:
    """In this process: the app on bench_setup's upstream; print both censuses as one JSON line."""
    from bench_setup import _app, _app_call, _upstream

    census = Census()
    with _upstream(0.0) as url:
        whole = _app_call(_app(url), "openai/full", stream=True)

        async def request() -> dict[str, float]:
            for _ in range(30):
                await whole(1)
            return {k: float(v) for k, v in (await census.around(whole(1))).items()}

        by_request = asyncio.run(request())
    with _upstream(2.0) as url:
        paced = _app_call(_app(url), "openai/paced", stream=True)

        async def chunk() -> dict[str, float]:
            await paced(5)
            fewer = await census.around(paced(short))
            more = await census.around(paced(tokens + short))
            return _less(more, fewer, tokens)

        by_chunk = asyncio.run(chunk())
    print(json.dumps({"chunk": by_chunk, "request": by_request}))


def run_once(what: str, n: int) -> None:
    """In this process, for callgrind: one paced stream of ``n`` tokens, or ``n`` requests of one token."""
    from bench_setup import _app, _app_call, _upstream

    with _upstream(20.0 if what == "chunk" else 0.0) as url:
        if what == "chunk":
            one = _app_call(_app(url), "openai/paced", stream=True)

            async def run() -> None:
                await one(2)
                await one(n)
        else:
            one = _app_call(_app(url), "openai/full", stream=what == "streamed")

            async def run() -> None:
                for _ in range(20 + n):
                    await one(1)

        asyncio.run(run())


def _callgrind(tree: Path, what: str, n: int) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
                           "--run", what, "--tokens", str(n)], env={**tree_env(tree), "PYTHONHASHSEED": "0"},
                          capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind of {what} on {tree} failed: {done.stderr[-800:]}")
    return int(found.group(1))


def _served(tree: Path, url: str, tokens: int) -> int:
    """``agent-core serve`` of ``tree`` under callgrind, two short streams then one of ``tokens``: its instructions."""
    import signal
    import tempfile
    import time

    import httpx
    from bench_gateway import API_KEY, _free_port

    port, home = _free_port(), tempfile.mkdtemp(prefix="bench-bytecodes-")
    base = f"http://127.0.0.1:{port}"
    with open(Path(home) / "serve.err", "w+b") as err:
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
                                 "agent_core.cli", "serve", "--log-level", "warning", "--port", str(port), "--token",
                                 API_KEY, "-c", f"base_url={url}/v1", "-c", f"api_key={API_KEY}", "-c", "max_retries=0"],
                                env={**tree_env(tree), "AGENT_CORE_HOME": home, "PYTHONHASHSEED": "0"},
                                stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 300  # a Python server starts slowly under callgrind
            while True:
                try:
                    httpx.get(base + "/healthz", timeout=2)
                    break
                except httpx.HTTPError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"agent-core serve of {tree} did not start under callgrind") from None
                    time.sleep(1)
            for n in (2, 2, tokens):
                body = {"model": "openai/paced", "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": n, "stream": True}
                with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=600,
                                  headers={"authorization": f"Bearer {API_KEY}"}) as response:
                    got = b"".join(response.iter_bytes())
                if response.status_code != 200 or got.count(b"data: ") < n:
                    raise SystemExit(f"agent-core serve of {tree} answered {response.status_code}: {got[:200]!r}")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=300)
        err.seek(0)
        found = re.search(r"Collected : (\d+)", err.read().decode(errors="replace"))
    if found is None:
        raise SystemExit(f"no count from callgrind for agent-core serve of {tree}")
    return int(found.group(1))


def instructions(tree: Path, n: int) -> None:
    """Print a paced chunk's and a request's instructions for ``tree``, then a paced chunk's in a real server."""
    from bench_gateway import start_upstream, stop

    chunk = (_callgrind(tree, "chunk", n + 10) - _callgrind(tree, "chunk", 10)) / n
    print(f"instructions a paced chunk: {chunk:,.0f}", flush=True)
    for what in ("streamed", "non-streamed"):
        request = (_callgrind(tree, what, 110) - _callgrind(tree, what, 10)) / 100
        print(f"instructions a {what} request of one token: {request:,.0f}", flush=True)
    upstream, url = start_upstream(20.0)
    try:
        served = (_served(tree, url, n + 10) - _served(tree, url, 10)) / n
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        stop(upstream)
    print(f"instructions a paced chunk in agent-core serve: {served:,.0f}", flush=True)


def _parts(counts: dict[str, float]) -> list[tuple[str, float]]:
    parts: collections.Counter[str] = collections.Counter()
    for key, n in counts.items():
        parts[key.split("/", 1)[0] if "/" in key else "(other)"] += n
    return [(p, n) for p, n in parts.most_common() if abs(n) >= 0.05]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=25, help="functions listed for each figure (default 25)")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to count as well")
    parser.add_argument("--tokens", type=int, default=100, help="paced tokens the chunk's figure is over")
    parser.add_argument("--instructions", type=int, metavar="N",
                        help="instead, count instructions under callgrind (valgrind): a paced chunk over N, requests")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", choices=("chunk", "streamed", "non-streamed"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.tokens, 10)
        return 0
    if args.run:
        run_once(args.run, args.tokens)
        return 0
    trees = [HERE.parent, *(Path(t).resolve() for t in args.tree)]
    if args.instructions:
        for tree in trees:
            print(f"== {tree}", flush=True)
            instructions(tree, args.instructions)
        return 0
    for tree in trees:
        done = subprocess.run([sys.executable, __file__, "--worker", "--tokens", str(args.tokens)],
                              env=tree_env(tree), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the count for {tree} failed:\n{done.stderr[-2000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"== {tree}")
        for what, label in (("chunk", "a paced chunk"), ("request", "a streamed request of one token")):
            counts = result[what]
            print(f"bytecodes {label}: {sum(counts.values()):,.0f}")
            print("  by package: " + ", ".join(f"{p} {n:,.0f}" for p, n in _parts(counts)))
            for key, n in sorted(counts.items(), key=lambda kv: -kv[1])[:args.top]:
                print(f"  {n:9,.1f}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
