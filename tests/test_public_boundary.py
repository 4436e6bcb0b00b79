"""The edge packages build on the public API only, as a third party's code would.

Bundled plugins and features, the store, the server and the testing kit may import
``agent_core`` itself, its plugin kit (``agent_core.plugin_kit``), ``agent_core.errors`` and
``agent_core.types``, their own modules, and public provider modules; never a kernel room
(``agent_core.values.frozen``, ``agent_core.plugins.config``, ...) nor a private module or
name. If one of them needs a kernel name, a third party would too: it belongs in
``agent_core`` or the kit. The store, the server and the testing kit host the engine, and may
also import the semi-public host kit (``agent_core.host_kit``); plugins and features may not. Every import is read, inside functions and ``TYPE_CHECKING``
blocks too, since a lazy import crosses the boundary all the same.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"

#: what every edge package may import from agent-core itself
PUBLIC = ("agent_core", "agent_core.plugin_kit", "agent_core.errors", "agent_core.types")
#: bundled plugin and feature modules are public (a feature may build on a plugin's helpers)
BUNDLED = ("agent_core_plugins", "agent_core_features")

#: area -> (its files, the agent_core modules it may import besides PUBLIC: the exact name, or a package + ".*")
AREAS = {
    "plugins": (ROOT / "plugins" / "agent_core_plugins", ()),
    "features": (ROOT / "features" / "agent_core_features", ()),
    "store": (CORE / "agent_core" / "store", ("agent_core.store.*", "agent_core.host_kit")),
    "server": (CORE / "agent_core" / "server",
               ("agent_core.server.*", "agent_core.store", "agent_core.testing.scripted", "agent_core.host_kit")),
    "testing": (CORE / "agent_core" / "testing", ("agent_core.testing.*", "agent_core.host_kit")),
}

# Files that still cross the boundary, each with what it imports. Strict: a file that no
# longer does fails here until its entry is removed, so the list only ever shrinks.
KNOWN: dict[str, str] = {}


def _module_of(path: Path) -> str:
    base = CORE if path.is_relative_to(CORE) else path.parents[1]
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def imports(path: Path) -> list[tuple[str, str]]:
    """Every ``(module, name)`` the file imports (``name`` empty for ``import module``), relative ones resolved.

    ``from package import name`` counts as importing ``package.name`` when that is a module.
    """
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package[: len(package) - (node.level - 1)]
                base = ".".join(head + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub, "") if _is_module(sub) else (base, alias.name))
    return out


def _allowed(module: str, extra: tuple[str, ...]) -> bool:
    for rule in (*PUBLIC, *extra):
        if module == rule or (rule.endswith(".*") and (module + ".").startswith(rule[:-1])):
            return True
    return False


def crossings(path: Path, extra: tuple[str, ...]) -> list[str]:
    """What ``path`` imports across the public boundary, one line each, in the order first met."""
    wrong: list[str] = []
    for module, name in imports(path):
        top = module.split(".")[0]
        private = any(p.startswith("_") for p in module.split(".")) or name.startswith("_")
        if top == "agent_core" and not _allowed(module, extra):
            wrong.append(f"{module} (not public to this package)")
        elif top in ("agent_core", "agent_core_providers", *BUNDLED) and private:
            wrong.append(f"{module}{'.' + name if name else ''} (private)")
        elif top == "agent_core_providers" and name:
            public = getattr(importlib.import_module(module), "__all__", ())
            if name not in public:
                wrong.append(f"{module}.{name} (not in the module's __all__)")
    return list(dict.fromkeys(wrong))


def _cases() -> list[object]:
    cases = []
    for area, (folder, extra) in AREAS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            marks = [pytest.mark.xfail(strict=True, reason=f"imports {KNOWN[rel]}")] if rel in KNOWN else []
            cases.append(pytest.param(path, extra, id=f"{area}:{path.relative_to(folder)}", marks=marks))
    return cases


@pytest.mark.parametrize(("path", "extra"), _cases())
def test_imports_only_the_public_api(path: Path, extra: tuple[str, ...]) -> None:
    assert crossings(path, extra) == []


def test_every_known_crossing_names_a_file_that_exists() -> None:
    assert [rel for rel in KNOWN if not (ROOT / rel).is_file()] == []


def test_the_check_sees_a_kernel_import_a_private_name_and_a_lazy_import(tmp_path: Path) -> None:
    """The parser itself: relative imports resolved, function-level imports read, private names caught."""
    package = tmp_path / "agent_core_plugins"
    package.mkdir()
    plugin = package / "sample.py"
    plugin.write_text(
        "from agent_core import Message\n"
        "from agent_core.plugin_kit import push\n"
        "from agent_core_providers.openai import _secret_helper\n"
        "from agent_core_providers._sse import SSEDecoder\n"
        "def later():\n"
        "    from agent_core.values.frozen import thaw\n",
        encoding="utf-8",
    )
    assert crossings(plugin, ()) == [
        "agent_core_providers.openai._secret_helper (private)",
        "agent_core_providers._sse.SSEDecoder (private)",
        "agent_core.values.frozen (not public to this package)",
    ]
