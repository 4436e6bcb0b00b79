"""docs/writing-plugins.md, run as a new user would follow it, snippet by snippet, in order.

Each ```python block that starts with ``# file: NAME`` is written to that file
in a fresh project directory (pytester); every other ```python block runs in
one shared namespace there. ```console lines run: ``pytest ...`` as a pytest
run in that directory, ``agent-core ...`` through the CLI against a loopback
server that answers with a real recorded body. ```text blocks are checked
against what the previous step produced: the snapshot excerpt against the
written ``.ambr`` file, the diff against the output of a run after the
prefix changed, the printed error against what the snippet printed.

So it also shows what the guide promises: PrefixExt is tested with the harness,
check_plugin and agent_snapshot in under 20 lines, --snapshot-update writes a
readable snapshot, a changed prefix fails with a readable diff, and a plugin
that appends to its input fails check_plugin naming process_chunk.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_core.cli import main
from providers._server import Reply

from .conftest import RECORDINGS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-plugins.md"
FENCE = re.compile(r"^```(\w+)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
FILE_MARK = re.compile(r"\A# file: (\S+)\n")


def blocks() -> list[tuple[str, str]]:
    return [(lang, body) for lang, body in FENCE.findall(GUIDE.read_text(encoding="utf-8"))]


def squash(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


class Project:
    """The new user's project directory and what its last step produced."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        self.ns: dict[str, Any] = {}
        self.printed = ""
        self.runs: list[Any] = []

    def forget_modules(self) -> None:
        """Drop the project's modules and bytecode, so an edited file is read again."""
        for name in [n for n, m in sys.modules.items() if str(getattr(m, "__file__", "") or "").startswith(
                str(self.path))]:
            del sys.modules[name]
        shutil.rmtree(self.path / "__pycache__", ignore_errors=True)

    def pytest(self, *args: str) -> Any:
        self.forget_modules()
        result = self.pytester.runpytest(*args)
        self.runs.append(result)
        return result


# The one thing the test adds to the user's project: this suite shares two cores with other jobs, and
# hypothesis's per-example deadline and slow-generation check measure that load, not the guide.
LOADED_MACHINE = """
from hypothesis import HealthCheck, settings

settings.register_profile("loaded-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loaded-machine")
"""


@pytest.fixture
def hypothesis_profile():
    from hypothesis import settings

    previous = settings._current_profile  # restored: the inner runs share this process
    yield
    settings.load_profile(previous)


@pytest.mark.slow
def test_the_guide_runs_as_written(pytester, server, monkeypatch, hypothesis_profile):
    project = Project(pytester)
    pytester.syspathinsert()
    pytester.makeconftest(LOADED_MACHINE)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guide-test")
    raw = (RECORDINGS / "openai-text.sse").read_bytes()
    server.enqueue(Reply(200, {"content-type": "text/event-stream"}, [raw]))
    checked = {"file": 0, "exec": 0, "pytest": 0, "cli": 0, "text": 0}

    for lang, body in blocks():
        if lang == "python":
            mark = FILE_MARK.match(body)
            if mark:
                (project.path / mark.group(1)).write_text(body[mark.end():], encoding="utf-8")
                checked["file"] += 1
            else:
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(body, str(GUIDE), "exec"), project.ns)  # noqa: S102 - the guide's own code
                project.printed = out.getvalue()
                checked["exec"] += 1
        elif lang == "console":
            for line in body.strip().splitlines():
                words = shlex.split(line)
                if words[:2] == ["pip", "install"]:
                    assert words[2] == "agent-core[testing]"  # what the new-user venv test installs
                elif words[0] == "pytest":
                    result = project.pytest(*words[1:])
                    assert result.ret == 0, result.stdout.str()
                    checked["pytest"] += 1
                elif words[0] == "agent-core":
                    project.forget_modules()
                    monkeypatch.chdir(project.path)
                    assert main(words[1:]) == 0
                    assert (project.path / "answer.sse").read_bytes() == raw  # the body, byte for byte
                    checked["cli"] += 1
                else:
                    raise AssertionError(f"the guide runs a command this test does not know: {line}")
        elif lang == "text":
            check_text(project, body)
            checked["text"] += 1
    assert checked == {"file": 8, "exec": 11, "pytest": 5, "cli": 1, "text": 3}


def check_text(project: Project, body: str) -> None:
    lines = [squash(line) for line in body.strip().splitlines()]
    if lines[0].startswith("plugin "):  # what check_plugin printed for the appending plugin
        assert squash(project.printed) == lines[0]
        assert "process_chunk" in lines[0]
    elif lines[0].startswith("-"):  # the diff after the prefix changed
        ext = project.path / "prefix_ext.py"
        original = ext.read_text(encoding="utf-8")
        ext.write_text(original.replace('"default": "[EXT]"', '"default": "[BOT]"'), encoding="utf-8")
        result = project.pytest()
        output = [squash(re.sub(r"^E\s", "", line)) for line in result.stdout.lines]
        assert result.ret == 1
        result.assert_outcomes(passed=2, failed=1)
        for line in lines:
            assert line in output, f"{line!r} not in the failing run's output:\n{result.stdout.str()}"
        ext.write_text(original, encoding="utf-8")
        assert project.pytest().ret == 0  # back to [EXT]: the snapshot matches again
    else:  # an excerpt of the written snapshot
        ambr = (project.path / "__snapshots__" / "test_prefix_ext.ambr").read_text(encoding="utf-8")
        written = [squash(line) for line in ambr.splitlines()]
        for line in lines:
            assert line in written, f"{line!r} not in the snapshot file:\n{ambr}"
