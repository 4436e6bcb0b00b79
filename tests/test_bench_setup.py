"""benchmarks/bench_setup.py works: its quick mode calls the real app against a real upstream and counts.

No figure is checked (tests do not time); a worker whose app answers anything but 200 stops the run,
so a broken facade or a broken harness fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


def test_paced_mode_sets_the_app_beside_a_bare_read():
    done = subprocess.run([sys.executable, str(SCRIPT), "--paced", "1,3", "--pace-ms", "1", "--quick"], check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^paced 1 ms,\s+(\d+) streams\s+\S+\s+app\s+([\d.]+) us a chunk, bare read\s+([\d.]+) us, "
                      r"app / bare\s+([\d.]+)x$", done.stdout, re.M)
    assert [int(r[0]) for r in rows] == [1, 3]
    for _, app, bare, ratio in rows:
        assert float(app) > 0 and float(bare) > 0
        assert abs(float(ratio) - float(app) / float(bare)) < 0.1 + 0.01 * float(ratio)
