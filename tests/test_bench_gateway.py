"""benchmarks/bench_gateway.py works: its quick mode relays paced streams through a real agent-core serve
(and through the bare byte relay that is the floor under the figures).

No figure is checked (tests do not time); the run itself fails when a stream loses a token, a
non-streamed reply lacks its text, or a process does not start, so a broken relay or a broken
harness fails here. The LiteLLM side needs its own environment and is not run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_gateway.py"


def test_quick_mode_relays_every_token_and_prints_every_figure():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--relay"], check=False, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = ("direct", "agent-core", "relay")
    rows = [row for line in done.stdout.splitlines()
            if len(row := line.split()) > 11 and row[-11] in names and not line.startswith("floor:")]
    cells = {(" ".join(row[:-11]), row[-11]) for row in rows}
    assert cells == {(n, g) for n in ("1 full", "1", "8") for g in names}
    out = done.stdout
    assert "AgentCore.astream_request on the same full-speed stream" in out and "serve / library = " in out
    assert "agent-core" in out.split("non-streamed")[1].split("\n")[0] and "req/s" in out
    assert "memory idle / peak: agent-core" in out
    spread = out.split("first token at 8 streams, ms after opening")[1].splitlines()[1:4]
    assert [line.split()[0] for line in spread] == list(names)
    for line in spread:  # six percentiles of when the first tokens came, in order, then the cores needed
        firsts = [float(x) for x in line.split(";")[0].split()[1:] if x != "/"]
        assert len(firsts) == 6 and firsts == sorted(firsts), line
        assert line.split(";")[1].split()[:3:2] == ["needs", "cores"]
    assert out.count("target: ") == 3
    floors = [line for line in out.splitlines() if line.startswith("floor: a bare byte relay's CPU per chunk")]
    assert len(floors) == 2  # the bare relay passed every token on too
    for line in floors:  # each CPU figure with its kernel part, which cannot exceed it
        figures = re.findall(r"= ([\d.]+) us \(([\d.]+) in the kernel\)", line)
        assert len(figures) == 2, line
        assert all(float(kernel) <= float(total) for total, kernel in figures), line


def test_a_client_worker_counts_tokens_against_a_real_upstream():
    """The client side alone: a worker streams from the upstream and reports every token and gap."""
    up = subprocess.Popen([sys.executable, str(SCRIPT), "--upstream", "--pace-ms", "5"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    try:
        port = int(up.stdout.readline())  # type: ignore[union-attr]
        worker = subprocess.run([sys.executable, str(SCRIPT), "--worker", "--url", f"http://127.0.0.1:{port}",
                                 "--model", "paced", "--streams", "3", "--tokens", "6", "--pace-ms", "5"],
                                input="go\n", check=False, capture_output=True, text=True, timeout=60)
    finally:
        up.stdin.close()  # type: ignore[union-attr]
        up.wait(timeout=10)
    ready, result = worker.stdout.splitlines()
    tally = json.loads(result)
    assert ready == "ready" and tally["bad"] == [] and tally["tokens"] == 18
    assert len(tally["first"]) == 3 and len(tally["gaps"]) == 15 and len(tally["delays"]) == 18
    assert all(g > -5 for g in tally["gaps"])  # each gap is the interval minus the 5 ms pacing
    assert all(0 <= d < 5000 for d in tally["delays"])  # from the upstream's write to the client, ms


def test_quick_mode_with_two_workers_relays_through_both_gateways():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--workers", "2"], check=False,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    gateways = {row[-11] for row in rows if len(row) > 11 and row[-11] in ("agent-core", "agent-core*2")}
    assert gateways == {"agent-core", "agent-core*2"}
    assert "agent-core*2" in done.stdout.split("non-streamed")[1].split("\n")[0]
