"""Telling a stub hook from a real one, by reading its source once per class.

The seed's minimal provider defines ``stream_api`` only as a placeholder
(``yield from []``) and really answers through ``call_api``. The engine must
not guess from an empty stream at run time (that costs a second, billable
request when a real stream happens to send nothing), so it decides once per
provider class, from the hook's source, whether ``stream_api`` is a stub.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import weakref

__all__ = ["streams_for_real"]

# provider class -> whether its stream_api is real; weak, so classes made on the fly can go
_REAL_STREAM: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _empty(node: ast.expr | None) -> bool:
    """``None``, ``[]``, ``()``, ``iter([])``: an expression that stands for "nothing"."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return not node.elts
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "iter"
        and len(node.args) == 1 and not node.keywords and _empty(node.args[0])
    )


def streams_for_real(cls: type) -> bool:
    """Whether a provider class's ``stream_api`` can yield anything (decided once per class).

    The seed's minimal provider writes ``stream_api`` as a stub (``yield from
    []``) and answers through ``call_api``. A ``stream_api`` whose whole body
    is a stub (``pass``, ``...``, a docstring, ``return``/``return iter([])``,
    ``yield from []`` / ``()``) counts as not implemented, so a streaming
    request to that provider uses ``call_api``. Anything else is taken at its
    word. When the source cannot be read, it counts as implemented.
    """
    known = _REAL_STREAM.get(cls)
    if known is not None:
        return known
    real = True
    try:
        raw = inspect.getattr_static(cls, "stream_api")
        func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
        fn = tree.body[0]
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            real = not all(
                isinstance(st, ast.Pass)
                or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))
                or (isinstance(st, ast.Return) and _empty(st.value))
                or (isinstance(st, ast.Expr) and isinstance(st.value, ast.YieldFrom) and _empty(st.value.value))
                for st in fn.body
            )
    except (OSError, TypeError, SyntaxError, IndexError, AttributeError):
        real = True
    _REAL_STREAM[cls] = real
    return real
