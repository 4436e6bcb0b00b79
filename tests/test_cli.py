"""The agent-core command: the README's main job, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_core.cli import main


def test_run_streams_the_echo_reply(capsys):
    assert main(["run", "hello world"]) == 0
    assert capsys.readouterr().out == "Echo: hello world\n"


def test_run_without_streaming_prints_the_same(capsys):
    assert main(["run", "--no-stream", "hello world"]) == 0
    assert capsys.readouterr().out == "Echo: hello world\n"


def test_run_json_prints_one_event_per_line(capsys):
    assert main(["run", "--json", "-c", "echo_prefix=Said:", "hi there"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events] == ["start", "partial", "partial", "partial", "final", "done"]
    assert events[-2]["message"]["content"] == "Said: hi there"
    assert events[-1]["outcome"]["status"] == "finished"


def test_unknown_provider_is_a_clear_error(capsys):
    assert main(["run", "--provider", "nope", "hi"]) == 1
    err = capsys.readouterr().err
    assert "unknown provider 'nope'" in err and "echo" in err


def test_bad_config_value_names_the_key(capsys):
    assert main(["run", "-c", "echo_prefix=3", "hi"]) == 1
    assert "'echo_prefix'" in capsys.readouterr().err


def test_plugins_lists_bundled_plugins_with_reasons(capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "echo" in out and "selected provider" in out
    assert "provider" in out


def test_module_entry_point_runs_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "agent_core.cli", "run", "from a subprocess"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Echo: from a subprocess\n"
