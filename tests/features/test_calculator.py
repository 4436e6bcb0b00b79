"""The ``calculator`` tool: exact arithmetic, and refusals of anything that is not arithmetic."""

from __future__ import annotations

import math
import time
import tracemalloc

import pytest
from agent_core import AgentCore, Message
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider, tool_call
from agent_core_plugins.calculator import CalculationError, CalculatorTool, evaluate
from hypothesis import given, settings
from hypothesis import strategies as st


def test_calculator_keeps_the_hook_contract():
    check_plugin(CalculatorTool)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 // 2", 3), ("7 % 4", 3), ("7 / 2", 3.5), ("2 ** 10", 1024),
        ("-3 + +1", -2), ("0.1 * 3", 0.1 * 3), ("sqrt(16) + abs(-2)", 6.0), ("max(1, 5, 3)", 5),
        ("factorial(10)", 3628800), ("2 ** -1", 0.5), ("round(pi, 2)", 3.14),
    ],
)
def test_arithmetic(expression, value):
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("9**9**9**9", "exponent 387420489 is out of bounds"),
        ("__import__('os')", "function '__import__' is not allowed"),
        ("().__class__", "Attribute is not allowed"),
        ("open('/etc/passwd')", "function 'open' is not allowed"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 3", "only numbers are allowed"),
        ("[1, 2]", "List is not allowed"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("2 ** 5000", "too large"),
        ("10 ** 1300 * 10 ** 1300", "too large"),
        ("1.5 ** 9999", "too large for a floating-point number"),
        ("factorial(100000)", "out of bounds"),
        ("1 +", "cannot parse"),
        ("True + 1", "only numbers are allowed"),
        ("sqrt(-1)", "sqrt(-1): math domain error"),
        ("(-8) ** 0.5", "not a real number"),
        ("1+" * 600 + "1", "too long"),
        ("", "non-empty"),
    ],
)
def test_refusals_say_what_is_wrong(expression, words):
    with pytest.raises(CalculationError) as err:
        evaluate(expression)
    assert words in str(err.value)


def test_the_tool_turns_a_refusal_into_an_error_result_the_model_reads():
    harness = PluginHarness(CalculatorTool)
    ok = harness.call("execute_tool", "calculate", {"expression": "6 * 7"}, harness.state)
    assert ok == {"success": True, "result": "42"}
    bad = harness.call("execute_tool", "calculate", {"expression": "9**9**9**9"}, harness.state)
    assert bad["success"] is False and "exponent 387420489 is out of bounds" in bad["error"]
    missing = harness.call("execute_tool", "calculate", {}, harness.state)
    assert missing == {"success": False, "error": "calculate needs an 'expression' string argument"}
    assert harness.call("format_tool_call_preview", "calculate", {"expression": "6 * 7"}, harness.state) == (
        "calculate 6 * 7")


def test_a_request_runs_the_calculator_and_the_model_reads_its_answers():
    Provider = scripted_provider(
        reply(tool_calls=[tool_call("calculate", {"expression": "2 ** 16"}, id="c1"),
                          tool_call("calculate", {"expression": "__import__('os')"}, id="c2")]),
        reply("2**16 is 65536."),
    )
    core = AgentCore(providers=[Provider], tools=[CalculatorTool])
    session = core.add_message(core.create_session(), Message(role="user", content="2**16?"))
    events = list(core.stream_request(session, {"enabled_plugins": ["calculator"]}))
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert results["c1"].success and results["c1"].message.content == "Result: 65536"
    assert not results["c2"].success
    assert "function '__import__' is not allowed" in results["c2"].message.content
    assert events[-1].outcome.status == "finished"
    assert events[-1].final_messages[-1].content == "2**16 is 65536."


def test_the_calculator_is_installed_by_entry_point():
    core = AgentCore.discover()
    assert "calculator" in core.plugins("tool")
    assert core.resolve({"provider": "echo"}).reasons["calculator"].startswith("off")  # opt-in
    assert core.resolve({"provider": "echo", "enabled_plugins": ["calculator"]}).reasons["calculator"].startswith("on")


_PIECES = st.sampled_from(["1", "9", "0", "2.5", "+", "-", "*", "/", "//", "%", "**", "(", ")", "pi", "sqrt(",
                           "factorial(", ",", "x", "'", "__import__", ".", "[", "lambda:", " "])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(_PIECES, max_size=30).map("".join)))
def test_any_text_gives_a_number_or_a_calculation_error(text):
    try:
        value = evaluate(text)
    except CalculationError as exc:
        assert str(exc)
    else:
        assert isinstance(value, (int, float)) and not isinstance(value, bool)


def test_round_digits_are_bounded():
    """round(2, -10**9) would build 10**(10**9) and never return; it is refused instead."""
    assert evaluate("round(2.567, 2)") == 2.57 and evaluate("round(1234, -2)") == 1200 and evaluate("round(7.5)") == 8
    for bad in ("round(2, -10**9)", "round(2, 1001)", "round(2, 0.5)"):
        with pytest.raises(CalculationError, match="round's digits must be a whole number"):
            evaluate(bad)


# -- hostile expressions: the model writes them, so each is a result or a refusal, quickly -----------------

@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("log(5, 1)", "log's base must be > 0 and not 1, got 1"),  # math.log divides by log(1) == 0
        ("log(1, 1.0)", "log's base must be > 0 and not 1"),
        ("log(2, 0)", "log's base must be > 0 and not 1, got 0"),
        ("log(0)", "log(0): math domain error"),
        ("log(-1, 2)", "math domain error"),
        ("0 ** -1", "division by zero"),
        ("0.0 ** -0.5", "division by zero"),
        ("1 // 0.0", "division by zero"),
        ("exp(1000)", "exp(1000): math range error"),
        ("1e308 * 10", "not a finite number"),
        ("1e309 - 1e309", "not a finite number"),
        ("floor(1e309)", "cannot convert float infinity to integer"),
        ("(10 ** 1000) ** 0.5", "too large for a floating-point number"),
        ("10 ** 1000 / 3", "too large for a floating-point number"),
        ("factorial(factorial(7))", "out of bounds"),
        ("(-8.0) ** (1/3)", "(-8.0)**0.3333333333333333 is not a real number"),
        ("2 ** 2 ** 2 ** 2 ** 2", "exponent 65536 is out of bounds"),
        ("-" * 999 + "1", "nested too deeply"),
        ("(" * 300 + "1" + ")" * 300, "cannot parse"),
        ("1\x00", "cannot parse"),
    ],
)
def test_domain_errors_and_overflows_are_refusals_that_say_why(expression, words):
    with pytest.raises(CalculationError) as err:
        evaluate(expression)
    assert words in str(err.value)


def test_a_refusal_shows_a_huge_number_by_its_size_not_its_1205_digits():
    with pytest.raises(CalculationError) as err:
        evaluate("(2 ** 4000) ** 3")
    assert str(err.value) == "<an integer of 4001 bits>**3 is too large (more than 4096 bits)"
    with pytest.raises(CalculationError) as err:
        evaluate("sqrt(2 ** 4000 * 2 ** 90)")
    assert str(err.value) == "sqrt(<an integer of 4091 bits>): int too large to convert to float"


def test_a_refusal_stays_short_whatever_it_quotes():
    out = CalculatorTool().execute_tool("calculate", {"expression": "round(" + "2**4095, " * 110 + "1)"}, {})
    assert out["error"].endswith("round(<an integer of 4096 bits>, <an integer of 4096 bits>, <an integer of 4096 bits>, "
                                 "... (111 arguments)): round() does not take 111 arguments")
    assert len(out["error"]) < 300
    out = CalculatorTool().execute_tool("calculate", {"expression": "1 + \x00" * 100}, {})
    assert len(out["error"]) < 400 and "..." in out["error"]  # 80 characters, escaped


def test_an_argument_that_is_not_a_string_is_a_refusal_not_its_repr():
    harness = PluginHarness(CalculatorTool)
    for payload in ({"expression": 10**5000}, {"expression": None}, {"expression": ["1+1"]}, "1+1", None):
        out = harness.plugin.execute_tool("calculate", payload, harness.state)
        assert out == {"success": False, "error": "calculate needs an 'expression' string argument"}


_NUMBERS = st.one_of(
    st.sampled_from(["0", "1", "-1", "0.0", "-0.0", "2", "9", "10", "0.5", "1e308", "1e309", "1e-308", "450", "451",
                     "4096", "10000", "10001", "9**9", "pi", "e", "tau", "1" * 400, "2**4096", "factorial(450)",
                     "nan"]),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_OPS = ["+", "-", "*", "/", "//", "%", "**"]
_FUNCS = ["abs", "round", "min", "max", "sqrt", "exp", "log", "log10", "log2", "sin", "cos", "tan", "asin", "acos",
          "atan", "floor", "ceil", "factorial"]


def _grow(inner):
    return st.one_of(
        st.tuples(inner, st.sampled_from(_OPS), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        st.tuples(st.sampled_from(["-", "+"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(_FUNCS), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(_FUNCS), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]}**{t[1]}**{t[2]}"),
    )


_LONG = st.tuples(st.sampled_from(["(", "-", "+", "sqrt(", "1+", "9**", "factorial(450)*", "2**", "-(", "1e308*"]),
                  st.integers(0, 700)).map(lambda t: t[0] * t[1] + "9" + ")" * (t[1] * t[0].count("(")))
HOSTILE = st.one_of(st.recursive(_NUMBERS, _grow, max_leaves=12), _LONG, st.text(max_size=60))


_EDGES = ["0", "1", "-1", "0.0", "-0.0", "0.5", "2", "-2.5", "1e-308", "1e308", "1e309", "-1e309", "(1e309 - 1e309)",
          "450", "451", "4097", "10001", "2**4095", "-(2**4095)"]


def test_every_function_and_operator_on_edge_values_is_a_result_or_a_refusal():
    """Exhaustive where a generator would rarely land: each function and operator on each pair of edge values."""
    exprs = [f"{f}({a})" for f in _FUNCS for a in _EDGES]
    exprs += [f"{f}({a}, {b})" for f in _FUNCS for a in _EDGES for b in _EDGES]
    exprs += [f"({a}) {op} ({b})" for op in _OPS for a in _EDGES for b in _EDGES]
    for expression in exprs:
        try:
            value = evaluate(expression)
        except CalculationError as exc:
            assert str(exc), expression
        else:
            assert isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)), expression


def _run_measured(expression):
    tool = CalculatorTool()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        out = tool.execute_tool("calculate", {"expression": expression}, {})
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, elapsed, peak


@settings(max_examples=150, deadline=None)
@given(HOSTILE)
def test_any_hostile_expression_is_a_result_or_a_refusal_in_bounded_time_and_memory(expression):
    out, elapsed, peak = _run_measured(expression)  # an exception here fails the test
    if out["success"]:
        assert set(out) == {"success", "result"}
        text = out["result"]
        assert text.lstrip("-").isdigit() or math.isfinite(float(text))  # an int, or a finite float
    else:
        assert set(out) == {"success", "error"}
        assert out["error"].startswith("calculate refused ") and len(out["error"]) < 1000
    assert elapsed < 1.0  # seconds; typical is a few milliseconds
    assert peak < 4 * 2**20  # bytes; typical is under 1 MiB


@settings(max_examples=8, deadline=None)
@given(st.lists(HOSTILE, min_size=1, max_size=3))
def test_a_request_continues_after_every_refusal(expressions):
    calls = [tool_call("calculate", {"expression": x}, id=f"c{i}") for i, x in enumerate(expressions)]
    Provider = scripted_provider(reply(tool_calls=calls), reply("Done."))
    core = AgentCore(providers=[Provider], tools=[CalculatorTool])
    session = core.add_message(core.create_session(), Message(role="user", content="compute"))
    events = list(core.stream_request(session, {"enabled_plugins": ["calculator"]}))
    results = [e for e in events if e.type == "tool_result"]
    assert [r.call_id for r in results] == [c["id"] for c in calls]
    for r in results:
        assert r.message.content.startswith("Result: ") if r.success else "calculate refused" in r.message.content
    assert events[-1].outcome.status == "finished"
    assert events[-1].final_messages[-1].content == "Done."  # the model was called again, with the refusals


def test_the_model_reads_each_domain_error_and_the_request_finishes():
    hostile = ["log(5, 1)", "log(0)", "sqrt(-1)", "1/0", "0**-1", "9**9**9**9", "factorial(10**6)", "exp(1e6)",
               "-" * 999 + "1", "1+" * 600 + "1"]
    calls = [tool_call("calculate", {"expression": x}, id=f"c{i}") for i, x in enumerate(hostile)]
    seen = []
    Scripted = scripted_provider(reply(tool_calls=calls), reply("Some of those have no value."))

    class Provider(Scripted):
        def stream_api(self, native_messages, state, *, request_id=None):
            seen.append([dict(m) for m in native_messages])
            return super().stream_api(native_messages, state, request_id=request_id)

    core = AgentCore(providers=[Provider], tools=[CalculatorTool])
    session = core.add_message(core.create_session(), Message(role="user", content="compute"))
    result = core.request(session, {"enabled_plugins": ["calculator"], "stream": True})
    assert result.outcome.ok
    assert result.session.messages[-1].content == "Some of those have no value."
    sent = [m["content"] for m in seen[-1] if m["role"] == "tool"]  # what the second call gave the model
    assert len(sent) == len(hostile) and all("calculate refused" in text for text in sent)
    assert "log's base must be > 0 and not 1" in sent[0] and "division by zero" in sent[3]
