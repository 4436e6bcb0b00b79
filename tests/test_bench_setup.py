"""benchmarks/bench_setup.py works: its quick mode calls the real app against a real upstream and counts.

No figure is checked (tests do not time); a worker whose app answers anything but 200 stops the run,
so a broken facade or a broken harness fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_setup.py"


def test_quick_mode_measures_both_modes():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(non-streamed|streamed, 8 tokens)\s+\S+\s+(\d+) Python calls a request; CPU a request "
                      r"min\s+(\d+) us, median\s+(\d+) us$", done.stdout, re.M)
    assert [r[0] for r in rows] == ["non-streamed", "streamed, 8 tokens"]
    for _, calls, low, median in rows:
        assert int(calls) > 100 and 0 < int(low) <= int(median)


def test_paced_mode_sets_the_app_beside_a_bare_read_and_the_chunk_in_the_read():
    done = subprocess.run([sys.executable, str(SCRIPT), "--paced", "1,3", "--pace-ms", "1", "--quick"], check=False,
                          capture_output=True, text=True, timeout=120)
    # the run itself stops when the chunk done in the read callback, or the library, loses a token
    assert done.returncode == 0, done.stderr
    number = r"(-?[\d.]+)"
    rows = re.findall(rf"^paced 1 ms,\s+(\d+) streams\s+\S+\s+app\s+{number} us a chunk, bare read\s+{number} us, "
                      rf"app / bare\s+(\S+); in the read\s+{number} us \(app / it\s+(\S+)\), "
                      rf"in a woken task\s+{number} us, the library\s+{number} us$", done.stdout, re.M)
    assert [int(r[0]) for r in rows] == [1, 3], done.stdout
    for _, app, bare, ratio, fused, fused_ratio, _tasked, _library in rows:
        for figure, shown in ((bare, ratio), (fused, fused_ratio)):
            if float(figure) > 0:
                assert abs(float(shown.rstrip("x")) - float(app) / float(figure)) < 0.1 + 0.01 * abs(float(app) / float(figure))
            else:  # a quick round's CPU difference can be zero or below: no ratio then
                assert shown == "n/a"
