"""benchmarks/bench_providers.py works: its quick mode runs the clients this environment has.

The benchmark's figures are not checked here (no timed tests); what is checked is that
the loopback server, the worker processes and our providers' path run end to end and
that every client's text is compared with what the server sent, so a client that
loses or invents text cannot produce a row.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.bench  # the benchmark tier: `pytest -m bench` (README, .ci/run)

#: the clients that need nothing beyond agent-core's test environment
OURS = ("httpx", "httpx+our-sse", "provider-loop", "agent-core")
SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_providers.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_providers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_mode_runs_httpx_and_our_paths_on_both_formats():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--clients", ",".join(OURS), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted((r["client"], r["format"]) for r in rows) == sorted(
        (client, fmt) for client in OURS for fmt in ("openai", "anthropic")
    )
    for r in rows:
        assert r["cpu_us"] > 0 and r["wall_us"] > 0 and r["peak_kib"] > 0, r
        assert r["cpu_x"] == pytest.approx(r["cpu_us"] / next(
            b["cpu_us"] for b in rows if b["client"] == "httpx" and b["format"] == r["format"]))
    assert "| openai | agent-core |" in done.stdout
    assert "target 2a (cpu): agent-core openai / httpx = " in done.stdout


def test_a_client_whose_text_differs_fails_naming_where(bench):
    expected = bench.expected_text(50)
    bench._checked(lambda: expected, expected, "exact")
    with pytest.raises(RuntimeError, match=r"lossy: accumulated \d+ chars, expected \d+; first difference at 8"):
        bench._checked(lambda: expected[:6] + expected[9:], expected, "lossy")


def test_the_server_streams_each_format_and_refuses_a_non_streaming_request(bench):
    server, url = bench.start_server(5)
    try:
        with httpx.Client() as client:
            refused = client.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": []})
            assert refused.status_code == 400
            for path, fmt in (("/v1/chat/completions", "openai"), ("/v1/messages", "anthropic")):
                body = client.post(f"{url}{path}", json={"stream": True}).content
                assert body == b"".join(getattr(bench, f"{fmt}_events")(5))
    finally:
        server.stdin.close()
        server.wait(timeout=10)
