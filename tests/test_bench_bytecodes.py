"""The bytecode census runs: it counts a paced chunk and a request through the real app, by function."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_census_counts_a_paced_chunk_and_a_request_and_names_the_engine_among_them():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_bytecodes.py"), "--top", "40", "--tokens", "20"],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    chunk = re.search(r"^bytecodes a paced chunk: ([\d,]+)$", out, re.MULTILINE)
    request = re.search(r"^bytecodes a streamed request of one token: ([\d,]+)$", out, re.MULTILINE)
    assert chunk and request, out
    per_chunk, per_request = (int(m.group(1).replace(",", "")) for m in (chunk, request))
    # a chunk runs the provider and the engine's hot loop; a request runs far more than one chunk
    assert 100 < per_chunk < per_request, out
    before_request = out[:request.start()]
    assert re.search(r"^\s+[\d,.]+\s+core/agent_core/engine/hot_loop\.py:\d+:feed$", before_request, re.MULTILINE), out
    assert re.search(r"^\s+[\d,.]+\s+providers/agent_core_providers/openai\.py:\d+:process_chunk$", before_request,
                     re.MULTILINE), out


def test_what_instructions_counts_under_callgrind_runs_bare():
    """``--instructions`` runs ``--run WHAT`` under callgrind (too slow for this suite); here each runs bare."""
    for what, n in (("chunk", 3), ("streamed", 2), ("non-streamed", 2)):
        done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_bytecodes.py"), "--run", what, "--tokens", str(n)],
                              check=False, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (what, done.stderr)
