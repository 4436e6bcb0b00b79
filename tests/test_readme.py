"""The README's test commands are the ones CI runs: the main suite, the bench and slow tiers, the live, client and browser tiers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^```sh[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
LIVE_SWITCH = "export AGENT_CORE_LIVE=required"
CLIENTS_SWITCH = "export AGENT_CORE_CLIENTS=required"
# What .ci/run does before the README's commands: the system browser the browser tests drive, and the
# switch that makes those tests fail rather than skip without it. Neither is a step a newcomer takes.
BROWSER_SETUP = (
    "command -v chromium >/dev/null || apt-get install -y -q chromium >/dev/null "
    "|| (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null)",
    "export AGENT_CORE_BROWSER=required",
)


def _sh_blocks() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [[line for line in body.splitlines() if line.strip()] for body in FENCE.findall(text)]


def _ci_lines() -> list[str]:
    """The commands of ``.ci/run``: its lines without comments, blanks and shell setup."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [
        line.strip()
        for line in lines
        if line.strip() and not line.lstrip().startswith("#") and not line.startswith(("set ", 'cd "'))
        and line.strip() not in BROWSER_SETUP
    ]


def test_ci_installs_the_browser_and_requires_the_browser_tests() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    for setup in BROWSER_SETUP:
        assert setup in lines


def test_readme_has_two_sh_blocks_of_one_line_each() -> None:
    blocks = _sh_blocks()
    assert len(blocks) == 2, f"expected two ```sh blocks in README.md (main suite, live tier), found {len(blocks)}"
    for block in blocks:
        assert len(block) == 1, f"each ```sh block should hold one command line, found {block}"


def test_main_command_is_the_first_ci_command_and_stays_fast() -> None:
    (main,), _ = _sh_blocks()
    assert _ci_lines()[0] == main
    assert "pytest" in main
    assert "-m live" not in main and "live]" not in main  # a newcomer's first run builds no model server


def test_live_command_is_run_by_ci_after_the_main_one_and_may_not_skip() -> None:
    _, (live,) = _sh_blocks()
    assert re.search(r"pip install .*\[[^\]]*\btest-live\b[^\]]*\]", live), "the live command installs test-live"
    assert live.endswith("pytest -m live")
    assert _ci_lines()[4:6] == [LIVE_SWITCH, live]


def test_the_client_tier_runs_in_ci_as_the_readme_names_it_and_may_not_skip() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tier = _ci_lines()[6:9]
    assert tier[0] == CLIENTS_SWITCH and len(tier) == 3
    for command in tier[1:]:
        assert f"`{command}`" in readme, command
        assert "pytest -m clients tests/clients" in command


def test_the_browser_tier_runs_in_ci_last_as_the_readme_names_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tier = _ci_lines()[9:]
    assert tier == [".venv/bin/pip install -q -e '.[test,test-browser]' && .venv/bin/python -m pytest -m browser tests/browser"]
    assert f"`{tier[0]}`" in readme


def test_the_main_run_deselects_the_live_tier_by_default() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    addopts = re.search(r"^addopts\s*=\s*(.+)$", pyproject, re.MULTILINE)
    assert addopts and "-m 'not live and not bench and not slow'" in addopts.group(1)
    assert re.search(r'^\s*"live: ', pyproject, re.MULTILINE), "the live marker is registered"
    assert re.search(r'^\s*"bench: ', pyproject, re.MULTILINE), "the bench marker is registered"
    assert re.search(r'^\s*"slow: ', pyproject, re.MULTILINE), "the slow marker is registered"


def test_the_bench_tier_runs_in_ci_right_after_the_main_suite_as_the_readme_names_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _ci_lines()[1] == ".venv/bin/python -m pytest -m bench"
    assert f"`{_ci_lines()[1]}`" in readme


def test_the_slow_tier_runs_in_ci_after_the_bench_tier_as_the_readme_names_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _ci_lines()[2] == ".venv/bin/python -m pytest -m slow"
    assert f"`{_ci_lines()[2]}`" in readme


def test_user_extras_and_test_extras_do_not_overlap() -> None:
    """Users install the extras named for what they do; the test tiers add to them, never repeat them."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    users = {"server", "postgres", "mcp", "otel", "metrics", "files", "testing"}
    tiers = {name for name in extras if name == "test" or name.startswith("test-")}
    assert set(extras) == users | tiers and tiers == {"test", "test-live", "test-clients", "test-browser"}

    def name(requirement: str) -> str:
        return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()

    for tier in tiers:
        own = [r for r in extras[tier] if not r.startswith("agent-core[")]
        for user in users:
            for requirement in extras[user]:
                repeated = name(requirement) in {name(r) for r in own}
                assert not repeated, f"{tier} repeats {requirement} of the {user} extra: name agent-core[{user}]"


def test_the_test_command_states_its_measured_time() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("## Test it", 1)[1]
    assert re.search(r"took \d+(\.\d+)? minutes", after.split("\n\n")[2]), "the paragraph after the command"


def test_the_provider_tests_run_again_on_stock_httpx_right_after_the_slow_tier() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = _ci_lines()[3]
    assert command == "AGENT_CORE_TRANSPORT=httpx .venv/bin/python -m pytest tests/providers"
    assert f"`{command}`" in readme
