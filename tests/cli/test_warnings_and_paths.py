"""Warnings said one way with their source, where things live, and the ways in: run as a user runs them.

Every command runs as a subprocess (``python -m agent_core`` or ``python -m agent_core.cli``) with its
own ``AGENT_CORE_HOME``, so no test reads the machine's own config file or store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from server._live import start_serve, stop_serve

pytestmark = pytest.mark.slow  # each test runs agent-core as a process: the tier `pytest -m slow`

TYPO = ("config key `max_tokns` is not declared by any installed plugin; did you mean `max_tokens`? "
        "(plugin 'anthropic' declares it in its config schema, and runs on its default until the key is spelt so)")


def cli(home: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None,
        module: str = "agent_core.cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin,
                          stdin=subprocess.DEVNULL if stdin is None else None, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "AGENT_CORE_HOME": str(home), **(env or {})}, check=False)


def test_a_config_typo_is_one_warning_line_naming_where_it_was_set(tmp_path: Path) -> None:
    """Each command with each layer once: run with -c, chat with a file, plugins with $AGENT_CORE_CONFIG."""
    (tmp_path / "agent.toml").write_text("max_tokns = 3\n")
    in_file = f"config file {tmp_path / 'agent.toml'}"
    for command, env, stdin, source in (
            (["run", "-c", "max_tokns=5", "hi"], {}, None, "-c"),
            (["chat", "-c", str(tmp_path / "agent.toml")], {}, "hello\n/exit\n", in_file),
            (["plugins"], {"AGENT_CORE_CONFIG": str(tmp_path / "agent.toml")}, None, in_file)):
        done = cli(tmp_path, *command, env=env, stdin=stdin)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()
        assert lines.count(f"warning: {TYPO} (set by {source})") == 1, (command, done.stderr)
        assert not [line for line in lines if "Warning" in line or "sys.exit" in line or "warning: warning" in line]


def test_a_model_without_a_provider_names_the_variable_that_set_it(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "hi", env={"AGENT_CORE_MODEL": "llama3.2"})
    assert done.stdout == "Echo: hi\n"
    assert done.stderr.startswith("warning: model 'llama3.2' is set but no provider is")
    assert done.stderr.rstrip().endswith("(set by $AGENT_CORE_MODEL)")


def test_a_plugins_python_warning_is_one_line_naming_its_code(tmp_path: Path) -> None:
    (tmp_path / "noisy_tool.py").write_text(
        "import warnings\n\ndef shout(text: str) -> str:\n    '''Shout.'''\n    return text\n\n"
        "warnings.warn('shout is going away', DeprecationWarning)\n")
    done = cli(tmp_path, "run", "--tool", "noisy_tool:shout", "hi",
               env={"PYTHONPATH": str(tmp_path), "PYTHONWARNINGS": "always"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: shout is going away (DeprecationWarning from {tmp_path / 'noisy_tool.py'}:7)"]


def test_serve_says_a_config_typo_once_with_its_source(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path, "-c", "max_tokns=5")
    stop_serve(proc)
    output = (tmp_path / f"serve-{url.rsplit(':', 1)[1]}.log").read_text()
    warned = [line for line in output.splitlines() if "max_tokns" in line]
    assert len(warned) == 1 and warned[0].endswith(f" warning: {TYPO} (set by -c)"), output
    assert f"  console    {url}/ (chat in a browser)" in output  # the banner names the console's page


def test_paths_says_where_config_store_and_logs_are_and_init_writes_a_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shown = cli(home, "paths")
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[0].startswith(f"config  {home / 'config.toml'} (default; not there yet")
    assert f"store   sqlite:///{home / 'sessions.db'}" in shown.stdout and "agent-core logs" in shown.stdout
    assert not home.exists()  # asking where the store would be creates nothing

    written = cli(home, "paths", "--init")
    assert written.returncode == 0 and "(default; exists)" in written.stdout
    assert tomllib.loads((home / "config.toml").read_text()) == {}  # all comments: it changes nothing until edited
    again = cli(home, "paths", "--init")
    assert again.returncode == 2 and again.stderr.startswith("error: config file") and "already exists" in again.stderr

    named = cli(home, "paths", "--json", env={"AGENT_CORE_CONFIG": str(tmp_path / "elsewhere.toml")})
    assert json.loads(named.stdout)["config"] == str(tmp_path / "elsewhere.toml")


def test_the_default_config_file_is_read_and_the_xdg_rule_places_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('echo_prefix = "From the file:"\n')
    assert cli(home, "run", "hi").stdout == "From the file: hi\n"
    assert cli(home, "run", "-c", "echo_prefix=Flag:", "hi").stdout == "Flag: hi\n"  # flags win over it

    env = {k: v for k, v in os.environ.items() if k != "AGENT_CORE_HOME"}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_DATA_HOME=str(tmp_path / "data"))
    where = subprocess.run([sys.executable, "-m", "agent_core", "paths", "--json"], capture_output=True, text=True,
                           env=env, timeout=60, check=True)
    assert json.loads(where.stdout)["config"] == str(tmp_path / "xdg" / "agent-core" / "config.toml")
    assert json.loads(where.stdout)["store"] == f"sqlite:///{tmp_path / 'data' / 'agent-core' / 'sessions.db'}"


def test_python_dash_m_agent_core_is_the_command(tmp_path: Path) -> None:
    assert cli(tmp_path, "run", "hi", module="agent_core").stdout == "Echo: hi\n"
