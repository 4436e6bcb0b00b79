"""benchmarks/bench_stream_task.py works: its quick mode streams both ways through the real app and prints a row per count.

No figure is checked (tests do not time); a stream that the app answers with anything but 200
stops the run, so a broken switch between the two ways fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_stream_task.py"


def test_quick_mode_measures_both_ways_for_each_count():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    number = r"(-?[\d.]+)"
    rows = re.findall(rf"^\s*(\d+) streams, 2 rounds: own task median\s+{number} us \(min\s+{number}\), "
                      rf"request's task median\s+{number} us \(min\s+{number}\); own task lower in (\d) of 2$",
                      done.stdout, re.MULTILINE)
    assert [int(r[0]) for r in rows] == [2, 4], done.stdout
    for row in rows:
        assert 0 <= int(row[5]) <= 2
