"""The providers use httpx, httpcore and uvicorn through their public names only.

A source scan of the providers' package, their tests and the benchmarks (the
server's own scan for uvicorn is ``tests/server/test_uvicorn_seam.py``). What
counts as those libraries' private attributes is read from their installed
sources: every ``_name`` they assign on an object. A use is flagged when:

- a module or name with a leading underscore is imported from one of them;
- an attribute of something other than ``self``/``cls`` is one of their private
  names that the scanned code never declares itself, or one their clients,
  transports and connection pools hold (``_transport``, ``_pool``,
  ``_network_backend``...: the seams a speed-up is tempted to reach through),
  whoever else declares the name too;
- ``getattr``/``setattr``/``hasattr``/``delattr`` name such an attribute in a string;
- a subclass of one of their classes reads or writes a private ``self`` attribute
  it does not declare itself.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = (ROOT / "providers", ROOT / "tests" / "providers", ROOT / "benchmarks")
LIBRARIES = ("httpx", "httpcore", "uvicorn")
#: the modules whose objects a pooled client's speed-up would reach into
_SEAM_MODULES = ("httpx/_client.py", "httpx/_transports/default.py", "httpcore/_async/connection_pool.py",
                 "httpcore/_sync/connection_pool.py", "httpcore/_async/connection.py",
                 "httpcore/_sync/connection.py")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _assigned_privates(tree: ast.AST) -> set[str]:
    """Private attribute names ``tree`` assigns on an object (``x._name = ...``)."""
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and _is_private(n.attr)}


@cache
def _theirs() -> tuple[frozenset[str], frozenset[str]]:
    """The libraries' private attribute names, and those of their clients, transports and pools."""
    names: set[str] = set()
    seams: set[str] = set()
    for library in LIBRARIES:
        home = Path(importlib.import_module(library).__file__).parent  # type: ignore[arg-type]
        for path in home.rglob("*.py"):
            found = _assigned_privates(ast.parse(path.read_text()))
            names |= found
            if any(str(path).endswith(m) for m in _SEAM_MODULES):
                seams |= found
    return frozenset(names), frozenset(seams)


def _sources() -> list[Path]:
    return sorted(p for top in SCANNED for p in top.rglob("*.py") if p.resolve() != Path(__file__).resolve())


@cache
def _ours() -> frozenset[str]:
    """Private attribute names the scanned code declares itself."""
    return frozenset().union(*(_assigned_privates(ast.parse(p.read_text())) for p in _sources()))


class _Scan(ast.NodeVisitor):
    def __init__(self, names: frozenset[str], seams: frozenset[str], ours: frozenset[str]) -> None:
        self.names, self.seams, self.ours = names, seams, ours
        self.found: list[str] = []
        self.bound: set[str] = set()  # names standing for the libraries' modules and classes
        self.own: list[set[str] | None] = []  # per enclosing class: what a subclass of theirs declares, else None

    def _say(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{getattr(node, 'lineno', '?')}: {what}")

    def _foreign(self, name: str) -> bool:
        return _is_private(name) and (name in self.seams or (name in self.names and name not in self.ours))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] in LIBRARIES:
                self.bound.add(alias.asname or parts[0])
                if any(map(_is_private, parts)):
                    self._say(node, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        parts = (node.module or "").split(".")
        if parts[0] not in LIBRARIES:
            return
        if any(map(_is_private, parts)):
            self._say(node, f"from {node.module} import ...")
        for alias in node.names:
            if _is_private(alias.name):
                self._say(node, f"from {node.module} import {alias.name}")
            self.bound.add(alias.asname or alias.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        theirs = any(self._from_library(base) for base in node.bases)
        declared = {t.id for stmt in node.body for t in _targets(stmt) if isinstance(t, ast.Name)}
        declared |= {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.own.append(_assigned_privates(node) | declared if theirs else None)
        self.generic_visit(node)
        self.own.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = node.value.id if isinstance(node.value, ast.Name) else None
        if owner in ("self", "cls"):
            own = self.own[-1] if self.own else None
            if own is not None and _is_private(node.attr) and node.attr not in own:
                self._say(node, f"{owner}.{node.attr}")
        elif self._foreign(node.attr) or (owner in self.bound and _is_private(node.attr)):
            self._say(node, ast.unparse(node))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = getattr(node.func, "id", "")
        if name in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1:
            key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and self._foreign(key.value):
                self._say(node, f"{name}(..., {key.value!r})")
        self.generic_visit(node)

    def _from_library(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.bound


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return [stmt.target]
    return []


def privates_used(source: str, ours: frozenset[str] = frozenset()) -> list[str]:
    """Each use of a private name of httpx, httpcore or uvicorn in ``source``, as ``line: what``."""
    names, seams = _theirs()
    scan = _Scan(names, seams, ours)
    scan.visit(ast.parse(source))
    return scan.found


def test_the_providers_their_tests_and_the_benchmarks_use_only_public_names() -> None:
    sources = _sources()
    assert any(p.name == "_seam.py" for p in sources)  # the scan sees the transport's way in
    found = {str(p.relative_to(ROOT)): used for p in sources if (used := privates_used(p.read_text(), _ours()))}
    assert found == {}


@pytest.mark.parametrize(("source", "expected"), [
    ("client = make()\npool = client._transport._pool", "2: client._transport._pool"),
    ("import httpx\nt = httpx.HTTPTransport()\nt._pool = None", "3: t._pool"),
    ("x = getattr(transport, '_pool', None)", "1: getattr(..., '_pool')"),
    ("setattr(pool, '_network_backend', b)", "1: setattr(..., '_network_backend')"),
    ("from httpcore._backends.sync import SyncStream", "1: from httpcore._backends.sync import ..."),
    ("from httpx import _content", "1: from httpx import _content"),
    ("import httpx._client", "1: import httpx._client"),
    ("import httpx\nhttpx._client", "2: httpx._client"),
    ("import httpcore\nclass S(httpcore.NetworkStream):\n    def f(self):\n        return self._sock", "4: self._sock"),
])
def test_the_scan_finds_each_kind_of_use(source: str, expected: str) -> None:
    assert expected in privates_used(source)


@pytest.mark.parametrize("source", [
    "import httpx\nclass T(httpx.BaseTransport):\n    def __init__(self):\n        self._pool = 1\n"
    "    def close(self):\n        self._pool.close()",
    "import httpx\nhttpx.Client(transport=t).get('/')",
    "class T:\n    def f(self):\n        return self._anything",
    "import httpx\nhttpx.__version__",
])
def test_the_scan_leaves_public_and_own_names_alone(source: str) -> None:
    assert privates_used(source) == []
