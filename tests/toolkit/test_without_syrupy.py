"""The pytest plugin must not break pytest for a user who installed agent-core without the testing extra."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest in a subprocess: the tier `pytest -m slow`

# A sitecustomize that makes syrupy look uninstalled: its distribution is hidden (so pytest never loads
# its pytest11 plugin) and importing it fails.
BLOCK_SYRUPY = """
import importlib.metadata as metadata
import sys

_distributions = metadata.distributions


def distributions(**kwargs):
    return (d for d in _distributions(**kwargs) if (d.metadata["Name"] or "").lower() != "syrupy")


class NoSyrupy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "syrupy":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


metadata.distributions = distributions
sys.meta_path.insert(0, NoSyrupy())
"""


def test_pytest_runs_and_the_fixture_says_what_to_install(pytester, monkeypatch):
    # A subprocess whose interpreter does not have syrupy.
    pytester.makepyfile(sitecustomize=BLOCK_SYRUPY)
    pytester.makepyfile(test_user="""
        from agent_core.testing import PluginHarness, check_plugin

        class Quiet:
            name = "quiet"

        def test_plain():
            check_plugin(Quiet)

        def test_snapshot(agent_snapshot):
            pass
    """)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert "syrupy" not in result.stdout.str().split("plugins:")[1].splitlines()[0]
    result.assert_outcomes(passed=1, errors=1)
    from agent_core.errors import install_hint

    said = f"the agent_snapshot fixture needs syrupy, which is not installed: {install_hint('testing')}"
    assert said in result.stdout.lines
    assert "Traceback" not in result.stdout.str() and "During handling" not in result.stdout.str()


def test_the_core_package_does_not_import_syrupy_hypothesis_or_httpx(pytester):
    """Loading the pytest plugin (every pytest run) costs no test dependency and no HTTP client."""
    pytester.makepyfile(check="""
        import sys
        import agent_core, agent_core.testing, agent_core.testing.pytest_plugin
        loaded = {"syrupy", "hypothesis", "httpx"} & set(sys.modules)
        assert not loaded, loaded
        from agent_core.testing import replay_provider
        assert "httpx" in sys.modules
        print("clean")
    """)
    result = pytester.run(__import__("sys").executable, "check.py")
    assert result.ret == 0, result.stderr.str()
    assert result.stdout.lines == ["clean"]


def test_syrupy_installed_but_switched_off_is_named_too(pytester):
    pytester.makepyfile(test_user="""
        def test_snapshot(agent_snapshot):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:syrupy", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*syrupy's pytest plugin, which is installed but not active*"])


def test_installing_agent_core_registers_the_pytest_plugin():
    from importlib.metadata import entry_points

    (ep,) = [ep for ep in entry_points(group="pytest11") if ep.name == "agent_core"]
    assert ep.value == "agent_core.testing.pytest_plugin"
    assert callable(ep.load().agent_snapshot)
