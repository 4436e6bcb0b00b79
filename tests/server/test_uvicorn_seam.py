"""uvicorn's internals are touched in one place only: ``agent_core/server/http/uvicorn_tuning/``.

A source scan of every Python file of the checkout (packages, tests, benchmarks, examples,
scripts) outside that wing: none imports from ``uvicorn.protocols`` (the HTTP protocols are
uvicorn's internals), none imports a ``_``-prefixed uvicorn name or module, and none reads or
writes a ``_``-prefixed attribute of uvicorn: of a uvicorn module or class, of an instance
built from one, or (in a subclass of one) on ``self`` unless the subclass declares it itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WING = ROOT / "core" / "agent_core" / "server" / "http" / "uvicorn_tuning"
_TOP = ("core", "providers", "plugins", "features", "tests", "benchmarks", "examples", "scripts")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _internal_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "uvicorn" and (parts[1:2] == ["protocols"] or any(map(_is_private, parts)))


class _Scan(ast.NodeVisitor):
    """Collects each use of a uvicorn internal in one module, as ``line: what``."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.bound: set[str] = set()  # names standing for uvicorn modules, classes, subclasses, or their instances
        self.own: list[set[str]] = []  # per enclosing uvicorn subclass: the private names it declares itself

    def _say(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{getattr(node, 'lineno', '?')}: {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _internal_module(alias.name):
                self._say(node, f"import {alias.name}")
            if alias.name.split(".")[0] == "uvicorn":
                self.bound.add(alias.asname or "uvicorn")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module.split(".")[0] != "uvicorn":
            return
        if _internal_module(module):
            self._say(node, f"from {module} import ...")
        for alias in node.names:
            if _is_private(alias.name):
                self._say(node, f"from {module} import {alias.name}")
            self.bound.add(alias.asname or alias.name)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            target = node.args[0].value
            if isinstance(target, str) and _internal_module(target):
                self._say(node, f"{name}({target!r})")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        value = node.value
        if isinstance(value, ast.Call) and self._uvicorn_expr(value.func):
            self.bound.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not any(self._uvicorn_expr(base) for base in node.bases):
            self.generic_visit(node)
            return
        self.bound.add(node.name)
        declared = {t.id for stmt in node.body for t in _targets(stmt) if isinstance(t, ast.Name)}
        declared |= {stmt.name for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.own.append(declared)
        self.generic_visit(node)
        self.own.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_private(node.attr) and isinstance(node.value, ast.Name):
            owner = node.value.id
            if owner in self.bound or (owner == "self" and self.own and node.attr not in self.own[-1]):
                self._say(node, f"{owner}.{node.attr}")
        self.generic_visit(node)

    def _uvicorn_expr(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.bound


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return [stmt.target]
    return []


def internals_used(source: str) -> list[str]:
    """Each use of a uvicorn internal in ``source``, as ``line: what``."""
    scan = _Scan()
    scan.visit(ast.parse(source))
    return scan.found


def _sources() -> list[Path]:
    return sorted(path for top in _TOP if (ROOT / top).is_dir() for path in (ROOT / top).rglob("*.py")
                  if WING not in path.parents)


def test_no_module_outside_the_wing_touches_uvicorn_internals() -> None:
    sources = _sources()
    assert any(p.name == "_live.py" for p in sources)  # the scan sees the code that drives uvicorn
    # A file that never names uvicorn cannot reach it; parsing only the others keeps the scan quick.
    texts = {p: text for p in sources if "uvicorn" in (text := p.read_text())}
    assert any(p.name == "_live.py" for p in texts)
    found = {str(p.relative_to(ROOT)): used for p, text in texts.items() if (used := internals_used(text))}
    assert found == {}


def test_the_wing_is_where_the_internals_are() -> None:
    # The scan would catch the wing's own imports, were it not the wing: it sees what it is meant to.
    assert internals_used((WING / "protocol.py").read_text())


@pytest.mark.parametrize(("source", "expected"), [
    ("from uvicorn.protocols.http.h11_impl import H11Protocol", "1: from uvicorn.protocols.http.h11_impl import ..."),
    ("import uvicorn.protocols.http.h11_impl as h", "1: import uvicorn.protocols.http.h11_impl"),
    ("from uvicorn.config import _private", "1: from uvicorn.config import _private"),
    ("import uvicorn._types", "1: import uvicorn._types"),
    ("import importlib\nimportlib.import_module('uvicorn.protocols.http')",
     "2: import_module('uvicorn.protocols.http')"),
    ("import uvicorn\nuvicorn._x", "2: uvicorn._x"),
    ("import uvicorn as u\nserver = u.Server(c)\nserver._y = 1", "3: server._y"),
    ("from uvicorn import Server\nclass S(Server):\n    def f(self):\n        return self._z", "4: self._z"),
])
def test_the_scan_finds_each_kind_of_use(source: str, expected: str) -> None:
    assert internals_used(source) == [expected]


@pytest.mark.parametrize("source", [
    "import uvicorn\nuvicorn.Server(uvicorn.Config(app)).run()",
    "import uvicorn\nclass S(uvicorn.Server):\n    _own = None\n    def f(self):\n        return self._own",
    "import other\nother._x\nclass T:\n    def f(self):\n        return self._y",
    "import uvicorn\nuvicorn.__version__",
])
def test_the_scan_leaves_public_and_own_names_alone(source: str) -> None:
    assert internals_used(source) == []
