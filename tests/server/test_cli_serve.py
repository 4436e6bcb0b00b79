"""``agent-core serve`` as a user starts it: a real process, answered by the official openai client."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from ._live import start_serve as _start
from ._live import stop_serve as _stop

pytestmark = pytest.mark.slow  # each test starts agent-core serve as a process: the tier `pytest -m slow`


def test_serve_answers_the_openai_client_and_keeps_sessions_in_agent_core_home(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, "-c", "echo_prefix=Heard:")
    try:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "Heard: hi"  # the -c keys reach every request
        r = httpx.post(f"{url}/v1/sessions/cli-1/turns", json={"message": "hi", "config": {"provider": "echo"}})
        assert '"saved"' in r.text
    finally:
        _stop(proc)
    assert (tmp_path / "sessions.db").exists()


def test_serve_takes_its_token_from_the_environment(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, env={"AGENT_CORE_TOKEN": "from-env"})
    try:
        assert httpx.get(f"{url}/v1/models").status_code == 401
        assert httpx.get(f"{url}/v1/models", headers={"authorization": "Bearer from-env"}).status_code == 200
    finally:
        _stop(proc)


def test_serve_reads_a_toml_config_file(tmp_path: Path) -> None:
    toml = tmp_path / "serve.toml"
    toml.write_text('echo_prefix = "From the file:"\n')
    proc, url = _start(tmp_path, "--config", str(toml))
    try:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "From the file: hi"
    finally:
        _stop(proc)


def _serve_fails(tmp_path: Path, *args: str) -> tuple[int, str]:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "serve", "--port", "0", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)})
    return done.returncode, done.stderr


def test_serve_refuses_to_start_on_a_config_every_request_would_fail_on(tmp_path: Path) -> None:
    code, err = _serve_fails(tmp_path, "-c", "provider=opneai")
    assert code == 2 and "the server's own config" in err and "did you mean 'openai'?" in err
    assert "Traceback" not in err
    code, err = _serve_fails(tmp_path, "-c", "provider=echo", "-c", "max_iterations=lots")
    assert code == 2 and "'max_iterations' must be integer" in err


def test_serve_names_a_mistyped_config_key_once_at_start_and_asks_no_upstream(tmp_path: Path) -> None:
    """The start-up check warns of a key nothing declares, and makes no network call (list_models would)."""
    proc, url = _start(tmp_path, "-c", "modle=gpt-4o", "--quiet", "-c", "provider=openai", "-c",
                       "base_url=http://127.0.0.1:9/v1", "-c", "list_models=true", "-c", "api_key=sk-x")
    try:
        assert httpx.get(f"{url}/healthz").status_code == 200  # it started, with its upstream down
    finally:
        _stop(proc)
    log = "".join(p.read_text() for p in tmp_path.glob("serve-*.log"))
    assert log.count("warning: config key `modle` is not declared by any installed plugin; did you mean `model`?") == 1


def test_a_port_out_of_range_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    code, err = _serve_fails(tmp_path, "--port", "99999")
    assert code == 2 and "99999 is not a port" in err and "Traceback" not in err


def test_a_mistyped_serve_setting_in_the_file_gets_a_suggestion(tmp_path: Path) -> None:
    toml = tmp_path / "serve.toml"
    toml.write_text("[serve]\nmax_concurent = 10\n")
    code, err = _serve_fails(tmp_path, "--config", str(toml))
    assert code == 2 and "unknown setting 'max_concurent'; did you mean 'max_concurrent'?" in err
