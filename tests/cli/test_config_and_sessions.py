"""The CLI's config layers (TOML file < environment < flags) and ``agent-core sessions``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from agent_core import Session
from agent_core.cli import main
from agent_core.store import open_store


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for key in ("AGENT_CORE_PROVIDER", "AGENT_CORE_MODEL", "AGENT_CORE_BASE_URL", "AGENT_CORE_CONFIG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AGENT_CORE_HOME", str(tmp_path / "home"))


def _plugins(capsys, *args: str) -> dict[str, str]:
    assert main(["plugins", *args]) == 0
    return {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}


def test_a_toml_file_then_the_environment_then_flags(capsys, monkeypatch, tmp_path):
    toml = tmp_path / "agent.toml"
    toml.write_text('provider = "openai"\nmodel = "from-file"\nsystem_prompt = "Be brief."\n'
                    '[prices."from-file"]\ninput = 1.5\noutput = 2\n')
    lines = _plugins(capsys, "--config", str(toml))
    assert "selected provider" in lines["openai"]
    assert "model=from-file" in lines["openai"] and "Be brief." in lines["system_prompt"]
    monkeypatch.setenv("AGENT_CORE_MODEL", "from-env")
    assert "model=from-env" in _plugins(capsys, "--config", str(toml))["openai"]
    assert "model=from-flag" in _plugins(capsys, "--config", str(toml), "--model", "from-flag")["openai"]
    assert "model=from-pair" in _plugins(capsys, "--config", str(toml), "-c", "model=from-pair")["openai"]
    monkeypatch.setenv("AGENT_CORE_CONFIG", str(toml))  # the file named by the environment
    assert "model=from-env" in _plugins(capsys)["openai"]


def test_without_any_layer_the_provider_is_echo(capsys):
    assert main(["run", "offline"]) == 0
    assert capsys.readouterr().out == "Echo: offline\n"


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    ('model = "unterminated\n', "is not valid TOML"),
    (b"\xff\xfe", "is not valid TOML"),
])
def test_a_bad_config_file_is_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.toml"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "run", "--config", str(path), "hi"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: config file") and message in line and str(path) in line


def test_a_wrong_value_type_from_the_file_names_the_key(tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text('provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmax_tokens = "lots"\n')
    assert main(["run", "--config", str(path), "hi"]) != 0
    assert "max_tokens" in capsys.readouterr().err


def test_sessions_list_show_export_delete(capsys, tmp_path):
    store = open_store()  # the default store under $AGENT_CORE_HOME, as the CLI opens it
    for sid, text in (("alpha", "first"), ("beta", "second")):
        assert main(["run", "--json", "--no-log", text]) == 0  # (not stored: --no-log)
        store.create(Session(sid).with_message({"role": "user", "content": text}))
    store.close()
    capsys.readouterr()

    assert main(["sessions", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == ["beta", "alpha"]  # the latest first
    assert main(["sessions", "list", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["id"], e["message_count"], e["title"]) for e in listed] == [("beta", 1, "second"), ("alpha", 1, "first")]
    assert all(e["updated_at"].endswith("Z") and "T" in e["updated_at"] for e in listed)  # ISO 8601, UTC

    assert main(["sessions", "show", "alpha"]) == 0
    assert capsys.readouterr().out.splitlines() == ["session alpha (revision 1, 1 messages)", "user: first"]
    assert main(["sessions", "export", "beta"]) == 0
    assert Session.from_json(capsys.readouterr().out.strip()).messages[0].content == "second"

    assert main(["sessions", "delete", "alpha"]) == 0
    assert main(["sessions", "show", "alpha"]) == 2
    err = capsys.readouterr().err
    assert "error: " in err and "'alpha'" in err and "Traceback" not in err
    assert main(["sessions", "delete", "alpha"]) == 2


def test_sessions_on_a_store_url(capsys, tmp_path):
    url = f"sqlite:///{tmp_path}/other.db"
    store = open_store(url)
    store.create(Session("elsewhere"))
    store.close()
    assert main(["sessions", "list", "--store", url]) == 0
    assert capsys.readouterr().out.split()[0] == "elsewhere"
    assert main(["sessions", "list"]) == 0  # the default store is another file
    assert capsys.readouterr().out == ""
