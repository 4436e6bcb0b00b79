"""The benchmarks that run two ways round by round work: their quick modes stream both ways and print a row per count.

``bench_stream_task.py`` switches where a stream's body runs, through the real app;
``bench_one_pump.py`` switches the provider's stream between one pump and two async
generators, through the app and through the library; ``bench_relay.py`` switches the
facades' relay between one coroutine and two async generators. No figure is checked (tests
do not time). A stream the app answers with anything but 200, a library stream that does not
end with its answer, or (in the last two) a way that never made a stream stops the run, so a
switch that breaks a way, or never takes, fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
NUMBER = r"(-?[\d.]+)"


def _quick(script: str) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"], check=False, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(text: str, first: str, second: str) -> list[tuple[str, ...]]:
    return re.findall(rf"^\s*(\d+) streams, 2 rounds: {first} median\s+{NUMBER} us \(min\s+{NUMBER}\), "
                      rf"{second} median\s+{NUMBER} us \(min\s+{NUMBER}\); {first} lower in (\d) of 2$",
                      text, re.MULTILINE)


def test_quick_mode_measures_both_ways_for_each_count():
    out = _quick("bench_stream_task.py")
    rows = _rows(out, "own task", "request's task")
    assert [int(r[0]) for r in rows] == [2, 4], out
    for row in rows:
        assert 0 <= int(row[5]) <= 2


def test_the_one_pump_benchmark_measures_both_ways_on_the_app_and_the_library():
    out = _quick("bench_one_pump.py")
    app, library = out.split("the library:")
    assert app.startswith("the app:"), out
    for part in (app, library):
        assert [int(r[0]) for r in _rows(part, "one pump", "two generators")] == [2, 4], out


def test_the_relay_benchmark_measures_both_ways_for_each_count():
    out = _quick("bench_relay.py")
    assert [int(r[0]) for r in _rows(out, "relay", "two generators")] == [2, 4], out


@pytest.mark.parametrize("script, ways", [("bench_one_pump.py", ["one pump", "two generators"]),
                                          ("bench_relay.py", ["relay", "two generators"])])
def test_the_stream_callgrind_counts_runs_each_way_and_a_wrong_way_is_named(script: str, ways: list[str]) -> None:
    """``--instructions`` runs ``--one-stream WAY`` under callgrind (too slow for this suite); here it runs bare.

    A way whose switch does not take stops the run, so each way must end with 0.
    """
    for way in ways:
        done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--one-stream", way, "--tokens", "3"],
                              check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (way, done.stderr)
    wrong = subprocess.run([sys.executable, str(BENCHMARKS / script), "--one-stream", "no such way"],
                           check=False, capture_output=True, text=True, timeout=60)
    assert wrong.returncode != 0 and f"the ways: {', '.join(ways)}" in wrong.stderr
