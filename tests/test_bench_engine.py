"""benchmarks/bench_engine.py works, and bench_targets.py runs it with bench_providers.py.

No figure is checked (no timed tests). What is checked: every table has its rows, and each
variant's work is verified inside the benchmark (accumulated text, tool messages), so a run
that loses chunks or skips tools cannot print a row.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_engine.py"
TARGETS = SCRIPT.with_name("bench_targets.py")


def test_the_one_command_prints_every_table_and_a_verdict_for_every_target() -> None:
    done = subprocess.run([sys.executable, str(TARGETS), "--quick"], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "Engine overhead" in out and "History" in out and "Tool calls in one turn" in out
    engine = out.split("$ python benchmarks/bench_providers.py")[0]
    rows = [line.split() for line in engine.splitlines()
            if line.strip() and line.split()[0].replace(",", "").isdigit()]
    assert [r[0] for r in rows] == ["0", "1", "3", "10", "10", "1,000", "10", "20"]
    assert "| openai | agent-core |" in out and "| anthropic | agent-core |" in out
    summary = out.split("Library targets, this run:")[1]
    for target in ("1a", "1b", "2a (cpu)", "2a (wall)", "3a", "3b"):
        assert f"target {target}:" in summary, target
    assert all(line.rstrip().endswith(("met", "MISSED")) or "not measured" in line
               for line in summary.strip().splitlines())


def test_the_benchmark_refuses_a_stream_that_lost_chunks() -> None:
    spec = importlib.util.spec_from_file_location("bench_engine", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(bench)

    class Lossy(bench.StreamProvider):
        chunks = 10

        def process_chunk(self, chunk, native_messages, state):
            return [], [], native_messages, state  # drops every partial

    core = bench.AgentCore(providers=[Lossy])
    with pytest.raises(AssertionError, match="lost chunks"):
        bench.engine_us(core, bench.Session("s", [bench.Message("user", "hi")]), 10)
