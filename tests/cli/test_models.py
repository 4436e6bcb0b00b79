"""``agent-core models`` as a user runs it: a local OpenAI-compatible server on 127.0.0.1 lists its models.

The public APIs are never called: a provider without its key is shown with its default
model and the variable it lacks, which is what this checks for the other providers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from providers._server import ScriptedServer, json_reply

pytestmark = pytest.mark.slow  # each test runs agent-core as a process: the tier `pytest -m slow`

NO_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def models(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    return subprocess.run([sys.executable, "-m", "agent_core", "models", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False,
                          env={**base, "AGENT_CORE_HOME": str(home), **(env or {})})


def test_a_local_server_lists_its_models_and_the_default_is_the_configured_one(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(json_reply({"object": "list", "data": [{"id": "llama3.2", "object": "model"},
                                                          {"id": "qwen2.5:0.5b", "object": "model"}]}))
    (tmp_path / "config.toml").write_text(f'provider = "openai"\nbase_url = "{server.url}/v1"\nmodel = "llama3.2"\n')
    done = models(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"default  openai/llama3.2 (provider from config file {tmp_path / 'config.toml'}; "
                        f"model from config file {tmp_path / 'config.toml'})")
    at = lines.index("openai (listed by its API: 2 models)")
    assert lines[at + 1:at + 3] == ["  llama3.2", "  qwen2.5:0.5b"]
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]
    # the others, on their own defaults: the public APIs are not asked without a key
    assert "anthropic (not asked, $ANTHROPIC_API_KEY is not set: its default model)" in lines
    assert "openai_responses (not asked, $OPENAI_API_KEY is not set: its default model)" in lines
    assert lines[lines.index("echo (no list endpoint: the models it names)") + 1] == "  echo-1"
    assert done.stderr == ""


def test_a_refused_list_is_said_and_json_names_every_provider(tmp_path: Path, server: ScriptedServer) -> None:
    server.enqueue(json_reply({"error": {"message": "invalid api key"}}, status=401))
    done = models(tmp_path, "--provider", "openai", "--base-url", f"{server.url}/v1", "--only", "openai", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["default"] == "openai/gpt-4o-mini"
    assert shown["default_from"] == "provider from --provider; the provider's default model"
    [offer] = shown["providers"]
    assert (offer["provider"], offer["models"], offer["listed"]) == ("openai", ["gpt-4o-mini"], False)
    assert offer["note"].startswith("could not list: ") and "401" in offer["note"]

    offline = json.loads(models(tmp_path, "--json").stdout)
    assert offline["default"] == "echo/echo-1" and offline["default_from"].startswith("no provider set")
    assert {o["provider"] for o in offline["providers"]} >= {"echo", "openai", "anthropic", "openai_responses"}
