"""``benchmarks/bench_engine.py --otel`` runs: every variant has its row, and only the SDK one records spans.

No figure is checked (no timed tests); the benchmark itself checks each stream's text and
each turn's messages, and the spans column shows the feature did its work where it should.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel benchmark needs opentelemetry-sdk (the test extra)")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_engine.py"


def test_the_otel_table_has_every_variant_and_the_spans_of_a_turn():
    done = subprocess.run([sys.executable, str(SCRIPT), "--otel", "--quick"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("OpenTelemetry (otel feature;")
    rows = [line.rsplit(None, 5) for line in lines[2:]]
    assert [(r[0].strip(), r[-1]) for r in rows] == [
        ("no otel", "0"), ("otel off", "0"), ("on, no-op", "0"),
        ("on, SDK", "7"),  # the request, two provider calls, four tool calls
    ]
