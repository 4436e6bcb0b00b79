"""``calculator``: the ``calculate`` tool, arithmetic on a parser that never runs code.

Models are poor at exact arithmetic, and handing their text to ``eval`` would let
any prompt run Python. This tool parses the expression with :mod:`ast` and walks
only the nodes listed here: numbers, ``+ - * / // % **``, unary signs,
parentheses, the constants ``pi`` / ``e`` / ``tau`` and a few functions from
:mod:`math`. Everything else (names, attributes, calls to anything not listed,
strings, comprehensions) is refused with a sentence saying what was found.

Sizes are bounded *before* computing, so ``9**9**9**9`` is refused at once
instead of running the machine out of memory: an exponent above
:data:`MAX_EXPONENT`, or an integer result longer than :data:`MAX_RESULT_BITS`
bits, is an error, and so is an expression longer than :data:`MAX_EXPRESSION_CHARS`.

The expression is the model's text, so :func:`evaluate` has one way to fail,
:class:`CalculationError`, whatever it is given: a domain error (``log(0)``,
``log(5, 1)``, ``sqrt(-1)``, ``1/0``, ``0**-1``), a float overflow, a NaN or
infinite result, nesting too deep for the parser or the evaluator; the tool
turns it into an error result the model reads. With those bounds every
expression is a few hundred ``ast`` nodes over numbers of at most
:data:`MAX_RESULT_BITS` bits, which is milliseconds and well under a megabyte.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from agent_core.plugin_kit import Tool, ToolCall, failure, success

__all__ = ["MAX_EXPONENT", "MAX_EXPRESSION_CHARS", "MAX_RESULT_BITS", "CalculatorTool", "CalculationError", "evaluate"]

MAX_EXPRESSION_CHARS = 1000
MAX_EXPONENT = 10_000
MAX_RESULT_BITS = 4096  # about 1233 decimal digits

Number = int | float


class CalculationError(ValueError):
    """An expression the calculator refuses; the message says what and why (the model reads it)."""


def _show(value: Any) -> str:
    """A number for a message: a 1,233-digit integer would bury the reason (and past 4,300, repr raises)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"<an integer of {value.bit_length()} bits>"
    return repr(value)


def _brief(expression: str) -> str:
    """The expression for a message, its first 80 characters: a message stays a few lines whatever it quotes."""
    return repr(expression[:80]) + ("..." if len(expression) > 80 else "")


def _call_text(name: str, args: list[Number]) -> str:
    shown = ", ".join(map(_show, args[:3])) + (f", ... ({len(args)} arguments)" if len(args) > 3 else "")
    return f"{name}({shown})"


def _bounded_int(value: Number, what: str) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise CalculationError(f"{what} is too large (more than {MAX_RESULT_BITS} bits)")
    return value


def _pow(base: Number, exp: Number) -> Number:
    if abs(exp) > MAX_EXPONENT:
        raise CalculationError(f"exponent {_show(exp)} is out of bounds (at most {MAX_EXPONENT} in absolute value)")
    if isinstance(base, int) and isinstance(exp, int) and exp > 0 and abs(base) > 1:
        if (abs(base).bit_length() - 1) * exp > MAX_RESULT_BITS:
            raise CalculationError(f"{_show(base)}**{exp} is too large (more than {MAX_RESULT_BITS} bits)")
    if base == 0 and exp < 0:
        raise CalculationError("division by zero (0 raised to a negative power)")
    result = base**exp
    if isinstance(result, complex):
        raise CalculationError(f"({_show(base)})**{_show(exp)} is not a real number")
    return result


def _mul(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_RESULT_BITS + 1:
        raise CalculationError(f"the product is too large (more than {MAX_RESULT_BITS} bits)")
    return a * b


def _div(fn: Callable[[Number, Number], Number]) -> Callable[[Number, Number], Number]:
    def run(a: Number, b: Number) -> Number:
        if b == 0:
            raise CalculationError("division by zero")
        return fn(a, b)

    return run


_BINARY: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _mul,
    ast.Div: _div(operator.truediv),
    ast.FloorDiv: _div(operator.floordiv),
    ast.Mod: _div(operator.mod),
    ast.Pow: _pow,
}
_UNARY: dict[type, Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _factorial(n: Number) -> int:
    if not isinstance(n, int) or n < 0:
        raise CalculationError("factorial needs a whole number >= 0")
    if n > 450:  # 450! is about 3600 bits
        raise CalculationError("factorial argument is out of bounds (at most 450)")
    return math.factorial(n)


def _log(x: Number, base: Number | None = None) -> float:
    """``math.log``, whose ``log(x, 1)`` divides by ``log(1) == 0`` and raises ``ZeroDivisionError``."""
    if base is not None and (base <= 0 or base == 1):
        raise CalculationError(f"log's base must be > 0 and not 1, got {_show(base)}")
    return math.log(x) if base is None else math.log(x, base)


def _round(x: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(x)
    if not isinstance(ndigits, int) or abs(ndigits) > 1000:  # round(2, -10**9) would build 10**(10**9)
        raise CalculationError("round's digits must be a whole number between -1000 and 1000")
    return round(x, ndigits)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs, "round": _round, "min": min, "max": max,
    "sqrt": math.sqrt, "exp": math.exp, "log": _log, "log10": math.log10, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "floor": math.floor, "ceil": math.ceil, "factorial": _factorial,
}


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise CalculationError(f"only numbers are allowed, found {node.value!r}")
        return _bounded_int(node.value, "a number")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        return _bounded_int(_BINARY[type(node.op)](left, right), "the result")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculationError(f"unknown name {node.id!r} (constants: {', '.join(sorted(_CONSTANTS))})")
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            shown = name if name else ast.unparse(node.func)
            raise CalculationError(f"function {shown!r} is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise CalculationError(f"{name}() takes no keyword arguments")
        args = [_eval(a) for a in node.args]
        try:
            return _bounded_int(FUNCTIONS[name](*args), "the result")
        except CalculationError:
            raise
        except TypeError:  # every argument is a number, so the count is wrong (and exc would name _round)
            raise CalculationError(f"{_call_text(name, args)}: {name}() does not take {len(args)} "
                                   f"argument{'s' * (len(args) != 1)}") from None
        except (ValueError, ArithmeticError) as exc:
            raise CalculationError(f"{_call_text(name, args)}: {exc}") from None
    what = type(node.op).__name__ if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node).__name__
    raise CalculationError(f"{what} is not allowed in a calculation (numbers, + - * / // % **, parentheses, "
                           "and the listed functions only)")


def evaluate(expression: str) -> Number:
    """The value of ``expression``, an ``int`` or a finite ``float``.

    Raises:
        CalculationError: saying what is wrong, for any input that is not an
            expression it can compute within the bounds (never another
            exception).
    """
    if not isinstance(expression, str) or not expression.strip():
        raise CalculationError("expression must be a non-empty string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"expression is too long ({len(expression)} characters, at most {MAX_EXPRESSION_CHARS})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"cannot parse: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack
        raise CalculationError("expression is nested too deeply") from None
    except ValueError as exc:
        raise CalculationError(f"cannot parse: {exc}") from None
    try:
        result = _eval(tree)
    except CalculationError:
        raise
    except RecursionError:
        raise CalculationError("expression is nested too deeply") from None
    except OverflowError:
        raise CalculationError("the result is too large for a floating-point number") from None
    except (ArithmeticError, ValueError, TypeError) as exc:  # a case the checks above do not name
        raise CalculationError(f"cannot compute: {exc}") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise CalculationError("the result is not a finite number")
    return result


_SCHEMA = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": (
            "Evaluate an arithmetic expression exactly: integers, decimals, + - * / // % ** and parentheses, "
            "constants pi, e, tau, and the functions " + ", ".join(sorted(FUNCTIONS)) + "."
        ),
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. (2 + 3) * 4 ** 2 / sqrt(16)"}},
            "required": ["expression"],
        },
    },
}


class CalculatorTool(Tool):
    """Offers ``calculate``; a refused expression is an error result the model reads, never an exception."""

    name = "calculator"
    version = "1.0.0"
    default_enabled = False  # opt-in: enabled_plugins=["calculator"]
    tool_schemas = (_SCHEMA,)

    def preview(self, call: ToolCall) -> str:
        expr = call.arguments.get("expression")
        return f"calculate {expr}" if isinstance(expr, str) else ""

    def run(self, call: ToolCall) -> dict[str, Any]:
        expression = call.arguments.get("expression")
        if not isinstance(expression, str):
            return failure("calculate needs an 'expression' string argument")
        try:
            value = evaluate(expression)
        except CalculationError as exc:
            return failure(f"calculate refused {_brief(expression)}: {exc}")
        return success(str(value))

    def to_display_format(self, text: str, result: Any, state: Any) -> dict[str, Any]:
        return {"type": "text", "content": text, "single_line": text.splitlines()[0][:120] if text else ""}
