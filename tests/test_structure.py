"""The kernel's import structure: no cycle between its modules, and no import running back up a layer.

(Module and function sizes are checked over every package by ``test_gates.py``.)

Imports inside functions are left out on purpose: they run when called, not when the
module loads, and are how an optional part (the store, the server) is reached lazily.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "core"
PACKAGE = ROOT / "agent_core"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(path: Path, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        package = _module(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    if not base.startswith("agent_core"):
        return []
    return [f"{base}.{alias.name}" if node.module is None else base for alias in node.names]


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text()).body:  # module level only
            if isinstance(node, ast.ImportFrom):
                for target in _targets(path, node):
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target and target != name:
                        graph[name].add(target)
    return graph


def test_the_import_graph_has_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


# The kernel's rooms, bottom up: each may import only the rooms below it (and itself). ``compat`` is a
# single module that imports nothing of the kernel when it loads, so any room may use it.
LAYERS = ("compat", "errors", "values", "runtime", "plugins", "tools", "engine")
# Above the kernel, bottom up: each may import the kernel and the edge packages below it.
EDGE = ("plugin_kit", "host_kit", "testing", "store", "server", "cli")


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_each_kernel_room_imports_only_the_rooms_below_it():
    wrong = []
    for module, targets in _graph().items():
        room = _room(module)
        if room not in LAYERS:
            continue
        for target in targets:
            other = _room(target)
            if other in LAYERS and LAYERS.index(other) > LAYERS.index(room):
                wrong.append(f"{module} -> {target}")
            elif other not in LAYERS and other != "":
                wrong.append(f"{module} -> {target} (the kernel never imports {other})")
    assert wrong == []


def test_the_edge_packages_import_only_the_ones_below_them():
    wrong = [f"{m} -> {t}" for m, targets in _graph().items() for t in targets
             if _room(m) in EDGE and _room(t) in EDGE and EDGE.index(_room(t)) > EDGE.index(_room(m))]
    assert wrong == []


def test_the_layers_name_what_is_there():
    """A room that moved or went away must leave the lists, or the layering checks nothing for it."""
    here = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert [room for room in (*LAYERS, *EDGE) if room not in here] == []


def test_every_room_says_what_lives_there_and_what_it_may_import():
    for room in (*LAYERS[2:], *EDGE):
        doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text()))
        assert doc and len(doc) > 200, room
