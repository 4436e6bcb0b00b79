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


# The server: its wings hold plain route functions over the state the app keeps, in small modules.
SERVER = PACKAGE / "server"
MOST_METHODS = 15
MOST_FUNCTION_LINES = 60
MOST_SERVER_LINES = 400


def _server_trees() -> list[tuple[str, ast.Module, int]]:
    return [(str(p.relative_to(ROOT)), ast.parse(text := p.read_text()), len(text.splitlines()))
            for p in sorted(SERVER.rglob("*.py"))]


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def test_no_server_module_is_over_400_lines():
    assert {path: lines for path, _, lines in _server_trees() if lines > MOST_SERVER_LINES} == {}


def test_no_server_function_is_over_60_lines():
    long = [f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path, tree, _ in _server_trees() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MOST_FUNCTION_LINES]
    assert long == []


def test_no_server_class_has_more_than_15_methods():
    big = [f"{path}: {cls.name} ({n} methods)" for path, tree, _ in _server_trees() for cls in _classes(tree)
           if (n := sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in cls.body)) > MOST_METHODS]
    assert big == []


def test_routes_are_plain_functions_not_methods_of_mixed_in_classes():
    """A route takes a starlette ``Request`` and answers a ``Response``: no method does that, and no server
    class is assembled from others of the server."""
    trees = _server_trees()
    ours = {cls.name for _, tree, _ in trees for cls in _classes(tree)}
    methods = []
    mixed = []
    for path, tree, _ in trees:
        for cls in _classes(tree):
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.returns is not None \
                        and ast.unparse(item.returns).endswith("Response") and any(
                            arg.annotation is not None and ast.unparse(arg.annotation) == "Request"
                            for arg in item.args.args):
                    methods.append(f"{path}: {cls.name}.{item.name}")
            bases = [ast.unparse(b).rpartition(".")[2] for b in cls.bases]
            if sum(base in ours for base in bases) > 1 or cls.name.endswith(("Routes", "Mixin")):
                mixed.append(f"{path}: {cls.name}({', '.join(bases)})")
    assert methods == [] and mixed == []
