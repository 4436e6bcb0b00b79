"""``agent-core run`` against the live server, as a new user would type it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._proxy import RecordingProxy

pytestmark = pytest.mark.live


def _agent_core() -> list[str]:
    script = Path(sys.executable).with_name("agent-core")
    if script.exists():
        return [str(script)]
    found = shutil.which("agent-core")
    assert found, "the agent-core command is not installed (pip install -e .)"
    return [found]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return subprocess.run(
        [*_agent_core(), "run", *args], capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL
    )


def test_run_streams_an_answer_and_sends_sampling_values(llama):
    with RecordingProxy(llama.port) as proxy:
        done = _run(
            "--provider", "openai", "--base-url", proxy.url + "/v1",
            "-c", "seed=1", "-c", "top_p=0.9", "--max-tokens", "32",
            "Name three colours.",
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the answer goes to stdout"
    assert "error" not in done.stderr.lower()
    posts = [r for r in proxy.requests if r.method == "POST" and r.path.endswith("/chat/completions")]
    assert len(posts) == 1, proxy.requests
    body = posts[0].body
    assert body["seed"] == 1 and isinstance(body["seed"], int)
    assert body["top_p"] == 0.9
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 32
    assert body["stream"] is True


def test_run_points_out_a_misspelt_config_key(llama):
    done = _run(
        "--provider", "openai", "--base-url", llama.url + "/v1", "-c", "max_tokens=8", "-c", "temprature=0.5", "Hi"
    )
    assert done.returncode == 0, done.stderr  # a warning, not an error
    assert "temprature" in done.stderr, done.stderr  # names the unknown key
    assert re.search(r"\btemperature\b", done.stderr), done.stderr  # and the closest known one
