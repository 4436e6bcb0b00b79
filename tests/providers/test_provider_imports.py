"""The bundled providers build on agent-core's public API only, as a third party's provider would."""

from __future__ import annotations

import ast
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
