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
