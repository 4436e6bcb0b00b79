"""One broken installed package: named with where it came from, and never a dead end.

A real distribution is put on the path (a ``.dist-info`` with ``entry_points.txt``, found by
``importlib.metadata`` as pip's would be). One entry point has a hook of the wrong shape, one
fails on import. Discovery names the package and the way out; switching the plugin off, or
``agent-core plugins`` (the command a person runs to see what is wrong), goes on without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_core import AgentCore
from agent_core.errors import ConfigError

PLUGIN = '''
class BadSig:
    name = "bad_sig"

    def process_chunk(self, native_chunk, state):  # a provider's hook shape, on an extension
        return [], [], [], state
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "brokenpkg.py").write_text(PLUGIN)
    info = tmp_path / "brokenpkg-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenpkg\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(
        "[agent_core.provider_extensions]\nbad_sig = brokenpkg:BadSig\n"
        "[agent_core.features]\nmissing = brokenpkg_gone:Nothing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_discovery_names_the_package_and_the_way_out(site: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        AgentCore.discover()
    text = str(caught.value)
    assert "installed plugin 'bad_sig'" in text and "brokenpkg:BadSig" in text and "package brokenpkg 0.3" in text
    assert "hook 'process_chunk'" in text and "disabled_plugins" in text


def test_switched_off_it_is_left_out_and_listed_and_the_rest_runs(site: Path) -> None:
    with pytest.raises(ConfigError, match="'missing'.*ModuleNotFoundError.*brokenpkg_gone"):
        AgentCore.discover(disabled=["bad_sig"])  # the other broken one still stops it
    core = AgentCore.discover(disabled=["bad_sig", "missing"])
    assert set(core.broken()) == {"bad_sig", "missing"} and "bad_sig" not in core.plugins("extension")
    assert "redact" in core.plugins("extension")  # the bundled plugins are all there
    done = core.request(core.add_message(core.create_session(), "user", "hi"), {"provider": "echo"})
    assert done.session.messages[-1].content == "Echo: hi"
    assert set(AgentCore.discover(keep_going=True).broken()) == {"bad_sig", "missing"}


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "AGENT_CORE_HOME": str(site / "home")}
    return subprocess.run([sys.executable, "-m", "agent_core.cli", *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


@pytest.mark.slow
def test_the_cli_lists_it_as_broken_and_runs_once_it_is_switched_off(site: Path) -> None:
    listed = _cli(site, "plugins")
    assert listed.returncode == 1, listed.stderr
    lines = {line.split()[1]: line for line in listed.stdout.splitlines() if line.startswith("broken")}
    assert set(lines) == {"bad_sig", "missing"} and "package brokenpkg 0.3" in lines["bad_sig"]
    assert any(line.split()[:2] == ["extension", "redact"] for line in listed.stdout.splitlines())

    refused = _cli(site, "run", "--no-log", "hi")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "installed plugin 'bad_sig'" in refused.stderr and "disabled_plugins" in refused.stderr

    ran = _cli(site, "run", "--no-log", "-c", 'disabled_plugins=["bad_sig", "missing"]', "hi")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "Echo: hi"
    assert _cli(site, "plugins", "-c", 'disabled_plugins=["bad_sig", "missing"]').returncode == 0
