"""The CLI as someone new to it meets it: run as a subprocess, checked by what it prints.

Piped prompts, runs kept and continued, ``logs``, ``--version``, help with examples and
defaults, "did you mean" for a misspelt provider, stored text that cannot drive the
terminal, and the engine's own record (native history) kept out of what people read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from agent_core import NATIVE_KEY, AgentCore, Message, Session
from agent_core.store import open_store
from agent_core_providers.echo import EchoProvider

pytestmark = pytest.mark.slow  # each test runs agent-core as a process: the tier `pytest -m slow`


def cli(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``agent-core ARGS`` with its own home; stdin is piped text, or /dev/null when None (as under cron)."""
    return subprocess.run(
        [sys.executable, "-m", "agent_core.cli", *args], input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None, capture_output=True, text=True, timeout=60,
        env={**os.environ, "AGENT_CORE_HOME": str(home)}, check=False,
    )


def test_a_piped_prompt_an_argument_and_both(tmp_path: Path) -> None:
    assert cli(tmp_path, "run", stdin="hi from a pipe\n").stdout == "Echo: hi from a pipe\n"
    assert cli(tmp_path, "run", "-", stdin="dash reads stdin").stdout == "Echo: dash reads stdin\n"
    both = cli(tmp_path, "run", "summarize", stdin="some text\n")
    assert both.stdout == "Echo: some text\n\nsummarize\n"  # piped text first, then the argument
    assert cli(tmp_path, "run", "just an argument").stdout == "Echo: just an argument\n"


def test_no_prompt_at_all_says_how_to_give_one(tmp_path: Path) -> None:
    done = cli(tmp_path, "run")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: no prompt") and "echo hi | agent-core run" in done.stderr
    assert "Traceback" not in done.stderr


def test_runs_are_kept_listed_and_continued(tmp_path: Path) -> None:
    assert cli(tmp_path, "run", "first question").returncode == 0
    assert cli(tmp_path, "run", "--no-log", "not kept").returncode == 0
    logs = [json.loads(line) for line in cli(tmp_path, "logs", "--json").stdout.splitlines()]
    assert [(e["title"], e["message_count"], e["revision"]) for e in logs] == [("first question", 2, 1)]
    sid = logs[0]["id"]

    assert cli(tmp_path, "run", "--continue", "and then?").stdout == "Echo: and then?\n"
    assert cli(tmp_path, "run", "--session", sid, "one more").returncode == 0
    shown = cli(tmp_path, "sessions", "show", sid).stdout.splitlines()
    assert shown[0] == f"session {sid} (revision 3, 6 messages)"
    assert shown[1:] == ["user: first question", "assistant: Echo: first question", "user: and then?",
                         "assistant: Echo: and then?", "user: one more", "assistant: Echo: one more"]
    listed = cli(tmp_path, "logs").stdout.splitlines()
    assert len(listed) == 1 and listed[0].startswith(sid) and listed[0].endswith("6 messages  first question")

    missing = cli(tmp_path, "run", "--session", "nope", "hi")
    assert missing.returncode == 2 and "'nope'" in missing.stderr
    clash = cli(tmp_path, "run", "--continue", "--system", "be brief", "hi")
    assert clash.returncode == 2 and "--system" in clash.stderr


def test_continue_with_nothing_stored(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "--continue", "hi")
    assert done.returncode == 2 and "no earlier run" in done.stderr


def test_version_and_help_show_examples_and_defaults(tmp_path: Path) -> None:
    from agent_core import __version__

    assert cli(tmp_path, "--version").stdout == f"agent-core {__version__}\n"
    top = cli(tmp_path, "--help").stdout
    assert "examples:" in top and "echo hi | agent-core run" in top and "agent-core logs" in top
    run = cli(tmp_path, "run", "--help").stdout
    assert "examples:" in run and "--continue" in run and "--no-log" in run
    for flag, says in (("--model", "default"), ("--max-iterations", "default 10"), ("--base-url", "default")):
        line = run[run.index(flag, run.index("options:")):]
        assert says in line[:300], flag
    assert "default 10" in cli(tmp_path, "logs", "--help").stdout
    for command in ("chat", "plugins", "logs", "sessions", "serve"):  # the README says every command's does
        assert "examples:" in cli(tmp_path, command, "--help").stdout, command
    assert "default 10" in cli(tmp_path, "chat", "--help").stdout  # --max-iterations says what it does
    assert "exit codes: 0 done; 1 the request failed" in top


def test_a_misspelt_provider_gets_a_suggestion(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "--provider", "opnai", "hi")
    assert done.returncode != 0 and "did you mean 'openai'?" in done.stderr


def test_stored_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/sessions.db") as store:
        evil = "\x1b[2J\x1b]0;pwned\x07hello\u202eevil"
        store.create(Session("s1", [Message("user", evil)], {"title": "t\x1b[31mred"}))
    for args in (("sessions", "list"), ("logs",), ("sessions", "show", "s1")):
        out = cli(tmp_path, *args).stdout
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, args
        assert "\\x1b" in out, args


def test_export_leaves_the_native_history_out_unless_asked(tmp_path: Path) -> None:
    assert cli(tmp_path, "run", "hello").returncode == 0
    sid = json.loads(cli(tmp_path, "logs", "--json").stdout.splitlines()[0])["id"]
    with open_store(f"sqlite:///{tmp_path}/sessions.db") as store:
        assert NATIVE_KEY in store.get(sid).session.metadata  # stored, for the next turn's provider
    plain = Session.from_json(cli(tmp_path, "sessions", "export", sid).stdout)
    assert NATIVE_KEY not in plain.metadata and [m.content for m in plain.messages] == ["hello", "Echo: hello"]
    full = Session.from_json(cli(tmp_path, "sessions", "export", "--native", sid).stdout)
    assert NATIVE_KEY in full.metadata


def test_an_unknown_config_key_warns_at_the_caller_s_line() -> None:
    core = AgentCore(providers=[EchoProvider])
    session = core.add_message(core.create_session(), "user", "hi")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.request(session, {"provider": "echo", "max_tokn": 3})
        for _ in core.stream_request(session, {"provider": "echo", "temprature": 1}):
            pass
    assert [Path(w.filename).name for w in caught] == ["test_newcomer.py", "test_newcomer.py"]


@pytest.mark.parametrize("extra", ["server"])
def test_install_hints_fit_a_checkout(extra: str) -> None:
    from agent_core.errors.hints import install_hint

    root = Path(__file__).resolve().parents[2]
    assert install_hint(extra) == f"pip install -e '.[{extra}]' (in {root})"  # the tests run from a checkout


def test_plugins_says_which_setting_turns_a_plugin_on(tmp_path: Path) -> None:
    off = [line for line in cli(tmp_path, "plugins").stdout.splitlines() if " system_prompt " in line]
    assert len(off) == 1 and "(system_prompt, system_prompt_policy: -c KEY=VALUE sets them)" in off[0]
    on = [line for line in cli(tmp_path, "plugins", "-c", "system_prompt=be brief").stdout.splitlines()
          if " system_prompt " in line]
    assert on[0].split()[2] == "on:"


def test_what_people_read_leaves_the_native_history_out(tmp_path: Path) -> None:
    done = json.loads(cli(tmp_path, "run", "--json", "--no-log", "hi").stdout.splitlines()[-1])
    assert done["type"] == "done" and NATIVE_KEY not in done["session"]["metadata"]
    core = AgentCore(providers=[EchoProvider])
    session = core.request(core.add_message(core.create_session("r"), "user", "hi"), {"provider": "echo"}).session
    assert NATIVE_KEY in session.metadata  # the value keeps it, for the next request
    assert "<native history: echo 2 messages>" in repr(session) and "'role'" not in repr(session).split("native")[1]


@pytest.mark.parametrize(("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_missing_api_key_is_named_before_anything_is_sent(tmp_path: Path, provider: str, variable: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (variable, variable.replace("API_KEY", "BASE_URL")):
        monkeypatch.delenv(name, raising=False)
    done = cli(tmp_path, "run", "--provider", provider, "--model", "m", "hi")
    assert done.returncode == 2 and done.stdout == ""
    assert f"${variable}" in done.stderr and "--api-key" in done.stderr and "Traceback" not in done.stderr


def test_a_rate_limit_says_when_it_retries(server, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_core.cli import main
    from providers._server import json_reply
    from providers._wire import oa_text

    server.enqueue(json_reply({"error": {"message": "slow down", "type": "rate_limit_error"}}, 429,
                              {"retry-after": "1"}), oa_text("Here."))
    code = main(["run", "--no-log", "--provider", "openai", "--base-url", f"{server.url}/v1", "--api-key", "sk-t",
                 "--model", "m", "hi"])
    out = capsys.readouterr()
    assert code == 0 and out.out == "Here.\n"
    assert "[retry] rate limited by openai; retrying in 1 s (attempt 2 of 3)\n" in out.err


def test_serve_help_explains_host_and_port_and_shows_examples(tmp_path: Path) -> None:
    shown = cli(tmp_path, "serve", "--help").stdout
    assert "default 127.0.0.1" in shown and "default 8000" in shown
    assert "examples:" in shown and "--log-json" in shown


def test_a_plugin_passed_in_replaces_an_installed_one_and_the_listing_says_so(tmp_path: Path) -> None:
    from agent_core import AgentCore
    from agent_core.errors import InvalidArgumentError

    class MyCalculator:
        name = "calculator"

        def get_tool_schemas(self, state: Any) -> list[dict]:
            return []

    core = AgentCore.discover(tools=[MyCalculator])
    assert core.replaced("tool") == ("calculator",) and core.replaced("provider") == ()
    assert core.replaced("tools") == ("calculator",)  # the plural the constructor's keywords use
    with pytest.raises(InvalidArgumentError, match="no plugin kind 'tol'"):
        core.replaced("tol")
    (tmp_path / "mytools.py").write_text("def calculator(expression: str) -> str:\n    return expression\n")
    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "plugins", "--tool", "mytools:calculator"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)})
    line = next(x for x in done.stdout.splitlines() if x.startswith("tool") and " calculator " in x)
    assert line.endswith("(yours, in place of the installed one)"), done.stdout


def test_a_mistyped_flag_gets_the_command_s_usage_and_the_flag_it_meant(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "--modle", "gpt-4o", "hi")
    assert done.returncode == 2 and done.stderr.startswith("usage: agent-core run ")
    assert "unrecognized arguments: --modle hi (--modle: did you mean --model?)" in done.stderr
    done = cli(tmp_path, "sessions", "list", "--limt", "3")
    assert done.returncode == 2 and "usage: agent-core sessions list" in done.stderr
    assert "did you mean --limit?" in done.stderr


def test_a_config_error_says_which_layer_set_the_value(tmp_path: Path) -> None:
    env = {"AGENT_CORE_PROVIDER": "opneai"}
    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "run", "--no-log", "hi"], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "AGENT_CORE_HOME": str(tmp_path), **env})
    assert done.returncode == 2 and "did you mean 'openai'?" in done.stderr
    assert done.stderr.rstrip().endswith("(set by $AGENT_CORE_PROVIDER)")
    toml = tmp_path / "agent.toml"
    toml.write_text("max_iterations = 'lots'\n")
    done = cli(tmp_path, "run", "--no-log", "--config", str(toml), "hi")
    assert done.returncode == 2 and f"(set by config file {toml})" in done.stderr
    done = cli(tmp_path, "run", "--no-log", "--config", str(toml), "-c", "max_iterations=x", "hi")
    assert "(set by -c)" in done.stderr  # the last layer wins, and is the one named
