"""The example plugin package (``examples/word-count``) is found through its entry point and answers a model.

It is put on the path as an installed distribution would be: a ``.dist-info`` whose
``entry_points.txt`` is written from the example's own ``pyproject.toml``, so a wrong group,
module or class name there fails here. ``agent-core`` then runs as a subprocess, as a user
runs it after ``pip install examples/word-count``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs agent-core as a process: the tier `pytest -m slow`

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "word-count"


def _installed(site: Path) -> Path:
    """A site folder holding the example's metadata, as pip would lay it out."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = project["entry-points"]
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in groups.items()))
    return site


def agent_core(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site" if (tmp_path / "site").exists() else _installed(tmp_path / "site")
    path = os.pathsep.join([str(site), str(EXAMPLE), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "agent_core", *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False,
                          env={**os.environ, "PYTHONPATH": path, "AGENT_CORE_HOME": str(tmp_path / "home")})


def test_the_example_tool_is_discovered_off_until_enabled(tmp_path: Path) -> None:
    listed = agent_core(tmp_path, "plugins").stdout.splitlines()
    [line] = [entry for entry in listed if entry.split()[:2] == ["tool", "word_count"]]
    assert line.split()[2].startswith("off"), line
    enabled = agent_core(tmp_path, "plugins", "-c", 'enabled_plugins=["word_count"]').stdout.splitlines()
    [line] = [entry for entry in enabled if entry.split()[:2] == ["tool", "word_count"]]
    assert line.split()[2].startswith("on"), line


def test_a_models_call_to_count_words_is_answered(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "count_words", "arguments": {"text": "three little words"}}]}, "done"]
    done = agent_core(tmp_path, "run", "--provider", "scripted", "--json", "-c", 'enabled_plugins=["word_count"]',
                      "-c", f"script={json.dumps(script)}", "how many words?")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert (result["tool_name"], result["message"]["content"]) == ("count_words", "Result: 3")
