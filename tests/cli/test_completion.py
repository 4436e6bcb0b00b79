"""``agent-core completion``: the printed script, loaded into a real bash, completes what a user types."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs agent-core and bash as processes: the tier `pytest -m slow`


def _script(tmp_path: Path, shell: str) -> Path:
    done = subprocess.run([sys.executable, "-m", "agent_core", "completion", shell], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "AGENT_CORE_HOME": str(tmp_path)})
    path = tmp_path / f"completion.{shell}"
    path.write_text(done.stdout)
    return path


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers after ``agent-core WORDS`` (the last word is the one being typed)."""
    line = " ".join(words)
    probe = (f"source {script}; COMP_WORDS=(agent-core {line}); COMP_CWORD={len(words)}; "
             "_agent_core; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_flags_subcommands_and_providers(tmp_path: Path) -> None:
    script = _script(tmp_path, "bash")
    assert _complete(script, "ch") == ["chat"]
    assert set(_complete(script, "")) >= {"run", "chat", "serve", "models", "paths", "completion", "sessions"}
    assert _complete(script, "run", "--no-") == ["--no-log", "--no-stream"]
    assert _complete(script, "sessions", "ex") == ["export"]
    assert _complete(script, "sessions", "export", "--na") == ["--native"]
    assert _complete(script, "run", "--provider", "open") == ["openai", "openai_responses"]
    assert _complete(script, "completion", "z") == ["zsh"]


def test_zsh_gets_the_same_function_through_bashcompinit(tmp_path: Path) -> None:
    script = _script(tmp_path, "zsh").read_text()
    assert script.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert script.endswith("complete -o default -F _agent_core agent-core\n")
    if shutil.which("zsh") is None:
        return  # the function itself is bash's, run above; zsh only loads it
    probe = f"source {tmp_path / 'completion.zsh'}; complete -p agent-core"
    done = subprocess.run(["zsh", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "_agent_core" in done.stdout, done.stderr
