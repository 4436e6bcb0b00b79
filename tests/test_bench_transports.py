"""benchmarks/bench_transports.py works: its quick mode runs the real app through each transport it can.

No figure is checked (tests do not time). Each transport either gives a row or is named as not
installed; a worker whose app answers anything but 200 stops the run, so a transport the provider
cannot stream through fails here.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_transports.py"


def test_quick_mode_measures_every_installed_transport():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], check=False, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    # A paced chunk's figure is a difference of two CPU readings: on a busy machine one quick round can
    # make it (and its ratio) negative, so the row is matched with a sign; only its presence is checked.
    rows = re.findall(r"^\s+2 paced streams\s+(\w+)\s+(-?[\d.]+) us a paced chunk, non-streamed\s+(-?\d+) us a "
                      r"request \((-?[\d.]+)x lean, non-streamed (-?[\d.]+)x\)$", done.stdout, re.M)
    measured = [r[0] for r in rows]
    installed = {"aiohttp": importlib.util.find_spec("httpx_aiohttp") is not None,
                 "h2": importlib.util.find_spec("h2") is not None}
    assert measured == ["lean", "httpx"] + [t for t in ("aiohttp", "h2") if installed[t]]
    skipped = [t for t in ("aiohttp", "h2") if not installed[t]]
    if skipped:
        assert f"not installed, skipped: {', '.join(skipped)}" in done.stdout
    for name, _chunk, request, x_chunk, x_request in rows:
        assert int(request) > 0
        if name == "lean":
            assert (x_chunk, x_request) == ("1.00", "1.00")


def test_an_unknown_transport_is_named():
    done = subprocess.run([sys.executable, str(SCRIPT), "--transports", "lean,carrier-pigeon"], check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown transport(s): carrier-pigeon" in done.stderr
