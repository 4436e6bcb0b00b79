"""open_store: the zero-configuration default, URL forms, and errors that name the problem without secrets."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from agent_core.errors import InvalidArgumentError, StoreError
from agent_core.store import default_home, open_store


def test_the_default_is_sessions_db_under_agent_core_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "not yet there"
    monkeypatch.setenv("AGENT_CORE_HOME", str(home))
    assert default_home() == home
    with open_store() as store:
        assert store.url == f"sqlite:///{home / 'sessions.db'}"
    assert (home / "sessions.db").is_file()


def test_without_agent_core_home_it_is_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_CORE_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if sys.platform.startswith("linux"):
        assert default_home() == tmp_path / "data" / "agent-core"


@pytest.mark.slow
def test_a_conversation_survives_process_restarts_with_no_configuration(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from agent_core import AgentCore\n"
        "from agent_core.store import open_store, run_turn\n"
        "turn = run_turn(AgentCore.discover(), open_store(), 'chat', sys.argv[1], {'provider': 'echo'})\n"
        "print(turn.revision, len(turn.session.messages))\n"
    )
    env = {"AGENT_CORE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    outputs = [
        subprocess.run([sys.executable, "-c", script, f"hello {i}"], env=env, capture_output=True, text=True,
                       check=True, timeout=120).stdout.split()
        for i in range(3)
    ]
    assert outputs == [["1", "2"], ["2", "4"], ["3", "6"]]


def test_relative_and_absolute_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///rel/dir/a.db"):
        pass
    assert (tmp_path / "rel" / "dir" / "a.db").is_file()
    with open_store(f"sqlite:///{tmp_path}/abs.db"):
        pass
    assert (tmp_path / "abs.db").is_file()


@pytest.mark.parametrize("url", ["mysql://u@h/db", "sessions.db", "sqlite:///", "sqlite:///:memory:", "sqlite://x.db"])
def test_unusable_urls_name_the_argument(url: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        open_store(url)
    assert info.value.argument == "url"


def test_a_password_in_a_bad_url_is_not_repeated() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        open_store("mysql://me:hunter2secret@db.example/x")
    assert "hunter2secret" not in str(info.value) and "<redacted>" in str(info.value)


def test_an_unreachable_postgresql_fails_fast_with_a_store_error_and_no_password() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(StoreError) as info:
        open_store(f"postgresql://me:hunter2secret@127.0.0.1:{port}/db")
    text = str(info.value)
    assert "cannot be reached" in text and str(port) in text
    assert "hunter2secret" not in text and "hunter2secret" not in repr(info.value.__cause__)
