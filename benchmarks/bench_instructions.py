"""Instructions per item on the hot path, counted by callgrind: figures that a busy machine cannot move.

    python benchmarks/bench_instructions.py                 # both drivers, N = 20,000
    python benchmarks/bench_instructions.py --tree /path/to/an/older/checkout --python /its/venv/bin/python

Wall-clock figures on a shared machine swing by more than a small change costs, so a
before/after comparison of the hot path is made in instructions: each driver runs under
``valgrind --tool=callgrind`` once with N items and once with one, and the difference over N
is the cost of one item, start-up cancelled out. ``--tree`` runs the same drivers against
another checkout (its ``core`` and ``providers`` first on the path), for a before/after pair.

Drivers: ``engine`` streams N chunks through ``AgentCore.stream_request`` with
``bench_hot_path.py``'s trivial provider and two pass-through extensions; ``openai`` calls the ``openai`` provider's
``process_chunk`` on N text chunks as the API streams them.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

ENGINE = """
import sys
sys.path.insert(0, sys.argv[2])
import bench_hot_path
from bench_hot_path import Counter, Observer, Provider
from agent_core import AgentCore, Message, Session
bench_hot_path.CHUNKS = int(sys.argv[1])
core = AgentCore(providers=[Provider], extensions=[Observer, Counter])
for _ in core.stream_request(Session("bench", [Message("user", "hi")])):
    pass
"""

OPENAI = """
import json, sys
from agent_core_providers.openai import OpenAIProvider
N = int(sys.argv[1])
provider = OpenAIProvider()
state = {"config": {}, "openai": {}, "openai_text": None}
chunk = json.loads('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
                   '[{"index":0,"delta":{"content":"tok"},"logprobs":null,"finish_reason":null}]}')
native = []
for _ in range(N):
    _, _, native, state = provider.process_chunk(chunk, native, state)
"""

DRIVERS = {"engine": ENGINE, "openai": OPENAI}


def instructions(python: str, tree: Path, driver: str, n: int) -> int:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'core'}{os.pathsep}{tree / 'providers'}"}
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c",
                          DRIVERS[driver], str(n), str(HERE)], env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no total for {driver}: {run.stderr[-500:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the checkout to measure (default: this one)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run it with")
    parser.add_argument("-n", type=int, default=20_000, help="items per run (default 20,000)")
    args = parser.parse_args()
    print(f"{'driver':<8} {'instructions / item':>20}   ({args.tree})")
    for driver in DRIVERS:
        per_item = (instructions(args.python, args.tree, driver, args.n + 1)
                    - instructions(args.python, args.tree, driver, 1)) / args.n
        print(f"{driver:<8} {per_item:>20,.0f}")


if __name__ == "__main__":
    main()
