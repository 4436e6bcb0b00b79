"""The bundled extensions and features use the providers' public helpers only.

A third-party extension can only use what is public, so the bundled ones must do their
work with the same API; this reads their imports and fails on a private module or name.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "plugins" / "agent_core_plugins").glob("*.py"),
                  *(ROOT / "features" / "agent_core_features").glob("*.py")])


def _imports(path: Path) -> list[tuple[str, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names]
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_private_import_from_the_kernel_or_the_providers(path: Path) -> None:
    for module, name in _imports(path):
        if not module.startswith(("agent_core", "agent_core_providers")):
            continue
        parts = module.split(".")
        assert not any(p.startswith("_") for p in parts), f"{path.name} imports the private module {module}"
        assert not name.startswith("_"), f"{path.name} imports the private name {module}.{name}"
        if name and module.startswith("agent_core_providers."):  # and it is listed as public there
            public = getattr(importlib.import_module(module), "__all__", ())
            assert name in public, f"{path.name} imports {module}.{name}, which is not in its __all__"
