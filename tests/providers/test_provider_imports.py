"""The bundled providers build on agent-core's public API only, as a third party's provider would."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import agent_core_providers

PROVIDERS = Path(agent_core_providers.__file__).parent
#: the agent_core modules a provider may import: the package, its plugin kit, its errors
PUBLIC = {"agent_core", "agent_core.plugin_kit", "agent_core.errors"}


def _agent_core_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "agent_core" or name.startswith("agent_core.")}


def test_providers_import_only_agent_core_its_kit_and_its_errors() -> None:
    crossing = {
        path.name: sorted(names - PUBLIC)
        for path in sorted(PROVIDERS.glob("*.py"))
        if (names := _agent_core_imports(path)) - PUBLIC
    }
    assert crossing == {}
    assert any(_agent_core_imports(path) for path in PROVIDERS.glob("*.py"))  # the scan sees the imports


def _third_party(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports that are neither the standard library's nor ours."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return {name for name in found if name not in sys.stdlib_module_names and not name.startswith("agent_core")}


def _declared() -> set[str]:
    """The distributions agent-core declares as its runtime dependencies (lowercase names)."""
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower() for spec in project["dependencies"]}


def test_every_package_the_providers_import_is_a_declared_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = {
        f"{path.relative_to(PROVIDERS)}: {name}"
        for path in sorted(PROVIDERS.rglob("*.py"))
        for name in _third_party(path)
        if not {d.lower() for d in distributions.get(name, [name])} & declared
    }
    assert undeclared == set()
    assert "httpx" in declared and any(_third_party(path) for path in PROVIDERS.rglob("*.py"))
