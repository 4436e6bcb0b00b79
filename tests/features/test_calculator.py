"""The ``calculator`` tool: exact arithmetic, and refusals of anything that is not arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core import AgentCore, Message
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider, tool_call
from agent_core_plugins.calculator import CalculationError, CalculatorTool, evaluate


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
