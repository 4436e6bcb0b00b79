"""Every performance target of the library itself (engine and providers), in one command.

    python3 -m venv /tmp/benchenv && /tmp/benchenv/bin/pip install -q -e . openai anthropic litellm
    /tmp/benchenv/bin/python benchmarks/bench_targets.py           # the tables in docs/performance.md
    .venv/bin/python benchmarks/bench_targets.py --quick           # a smoke run: small sizes, one run each, httpx and agent-core only

It runs the two benchmarks that hold the figures, one after the other, each
in its own process so neither inherits the other's heap or warm caches:

* ``bench_engine.py``: the engine's own cost with no network (overhead per
  chunk with 0/1/3/10 pass-through extensions, a tool turn on 10 / 10,000 /
  100,000 messages of history, one turn with 250 / 500 / 1,000 tool calls):
  targets 1 and 3.
* ``bench_providers.py``: our ``openai`` and ``anthropic`` paths through
  ``AgentCore`` against httpx, the official SDKs and LiteLLM on the same
  loopback streams: target 2. Clients whose package is not installed are
  skipped (the SDKs and LiteLLM belong in the benchmark's own environment,
  never in agent-core's dependencies).

Each prints its tables and then one ``target ...: met`` or ``MISSED`` line per
target; this script repeats those lines at the end, so the verdicts of one
run can be read together.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> list[str]:
    """Run one benchmark, echoing its output; return its target lines."""
    cmd = [sys.executable, str(HERE / script), *args]
    print(f"$ {' '.join(['python', f'benchmarks/{script}', *args])}", flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out, flush=True)
    return [line for line in out.splitlines() if line.startswith("target ")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one run each (a smoke test)")
    args = ap.parse_args()
    quick = ["--quick"] if args.quick else []
    verdicts = run("bench_engine.py", *quick)
    # the smoke run times only the two paths target 2a compares: the other clients have a smoke test
    # of their own (tests/test_bench_providers.py), and LiteLLM alone takes seconds to import
    verdicts += run("bench_providers.py", *(quick + ["--clients", "httpx,agent-core"] if quick else ["--runs", "5"]))
    print("Library targets, this run:")
    for line in verdicts:
        print(f"  {line}")


if __name__ == "__main__":
    main()
