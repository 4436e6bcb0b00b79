"""What one facade request costs the server before and around its chunks: the ASGI app called directly.

    .venv/bin/python benchmarks/bench_setup.py                         # this tree, both modes
    .venv/bin/python benchmarks/bench_setup.py --tree /tmp/before      # and another checkout, alternating
    .venv/bin/python benchmarks/bench_setup.py --quick                 # a smoke run

The gateway benchmark (``bench_gateway.py``) measures from outside, with clients, an HTTP
server and the upstream sharing two cores; its per-request figures swing by a third from
run to run, which hides a change of a few percent. This one leaves the HTTP server and the
client out: a worker process per tree builds the app (``create_app``, as ``agent-core serve``
does, on uvloop when installed) and calls it with a prepared ``POST /v1/chat/completions``,
the upstream being ``bench_gateway.py``'s (full speed, 8 tokens). It prints, per tree and
mode:

- Python calls per request (``sys.setprofile``, one request after the warm-up): a count
  that does not move with the machine's noise, so a cut of a few percent shows;
- CPU per request (``time.process_time`` over ``--requests``), min and median of
  ``--rounds`` rounds, the trees taking turns round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gateway import start_upstream, stop, tree_env  # noqa: E402 - the benchmarks folder is not a package


def worker(url: str, mode: str, requests: int) -> None:
    """Build the app against ``url``; print the call count, then the CPU per request of each round asked for."""
    os.environ["AGENT_CORE_HOME"] = tempfile.mkdtemp(prefix="bench-setup-")
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    from agent_core.server.app import create_app

    app = create_app(token="k", config={"base_url": url + "/v1", "api_key": "k", "max_retries": 0, "provider": "openai"})
    body = json.dumps({"model": "openai/full", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
                       "stream": mode == "stream"}).encode()
    headers = [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer k"), (b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]

    async def one() -> None:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                 "query_string": b"", "root_path": "", "headers": headers, "client": ("127.0.0.1", 5555),
                 "server": ("127.0.0.1", 8000), "state": {}}
        sent, done, status = False, asyncio.Event(), []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif not message.get("more_body"):
                done.set()

        await app(scope, receive, send)
        if status != [200]:
            raise SystemExit(f"the app answered {status}")

    async def main() -> None:
        for _ in range(50):  # warm-up: imports, pools, recorded resolutions
            await one()
        calls = 0

        def count(frame: Any, event: str, arg: Any) -> None:
            nonlocal calls
            calls += event == "call"

        sys.setprofile(count)
        await one()
        sys.setprofile(None)
        print(calls, flush=True)
        loop = asyncio.get_running_loop()
        while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go":
            started = time.process_time()
            for _ in range(requests):
                await one()
            print((time.process_time() - started) / requests * 1e6, flush=True)

    asyncio.run(main())


def run(args: argparse.Namespace) -> int:
    upstream, url = start_upstream(0.0)
    trees = [Path(t).resolve() for t in [HERE.parent, *args.tree]]
    try:
        for mode in ("plain", "stream"):
            procs = []
            for tree in trees:
                proc = subprocess.Popen([sys.executable, __file__, "--worker", url, "--mode", mode,
                                         "--requests", str(args.requests)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=tree_env(tree))
                assert proc.stdout is not None
                procs.append((tree, proc, int(proc.stdout.readline()), []))
            for r in range(args.rounds):
                for tree, proc, _, times in (procs if r % 2 == 0 else procs[::-1]):
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                    times.append(float(proc.stdout.readline()))
            label = "non-streamed" if mode == "plain" else "streamed, 8 tokens"
            for tree, proc, calls, times in procs:
                stop(proc)
                print(f"{label:<20} {str(tree):<32} {calls:>6} Python calls a request; CPU a request "
                      f"min {min(times):7.0f} us, median {statistics.median(times):7.0f} us", flush=True)
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        stop(upstream)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure, taking turns")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--requests", type=int, default=150, help="requests per round")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds of 5 requests")
    parser.add_argument("--worker", metavar="UPSTREAM", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="plain", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.mode, args.requests)
        return 0
    if args.quick:
        args.rounds, args.requests = 2, 5
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
