"""The agent-core command: the README's main job, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from agent_core.cli import main
from providers._server import CUT, sse_reply
from providers._wire import OA_DONE, oa_chunk, oa_text


def test_run_streams_the_echo_reply(capsys):
    assert main(["run", "hello world"]) == 0
    assert capsys.readouterr().out == "Echo: hello world\n"


def test_run_without_streaming_prints_the_same(capsys):
    assert main(["run", "--no-stream", "hello world"]) == 0
    assert capsys.readouterr().out == "Echo: hello world\n"


def test_run_json_prints_one_event_per_line(capsys):
    assert main(["run", "--json", "-c", "echo_prefix=Said:", "hi there"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events] == ["start", "partial", "partial", "partial", "final", "done", "saved"]
    assert events[-3]["message"]["content"] == "Said: hi there"
    assert events[-2]["outcome"]["status"] == "finished"
    assert events[-1]["revision"] == 1  # the run is kept in the store


def test_unknown_provider_is_a_clear_error(capsys):
    assert main(["run", "--provider", "nope", "hi"]) == 2  # a mistake in what was asked, not a failed request
    err = capsys.readouterr().err
    assert "unknown provider 'nope'" in err and "echo" in err


def test_bad_config_value_names_the_key(capsys):
    assert main(["run", "-c", "echo_prefix=3", "hi"]) == 2
    assert "'echo_prefix'" in capsys.readouterr().err


def test_plugins_lists_bundled_plugins_with_reasons(capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "echo" in out and "selected provider" in out
    assert "provider" in out


def test_module_entry_point_runs_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "agent_core.cli", "run", "from a subprocess"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Echo: from a subprocess\n"


# -- config flags, typos, tools and plugin states -------------



def test_run_sends_flag_and_dash_c_values_to_the_wire_with_their_types(server, capsys):
    server.enqueue(oa_text("Hi ", "there"))
    code = main([
        "run", "--provider", "openai", "--base-url", f"{server.url}/v1", "--model", "m",
        "-c", "seed=1", "-c", "top_p=0.9", "-c", 'stop=["END"]', "--max-tokens", "32", "--temperature", "0.2",
        "hello",
    ])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out == "Hi there\n" and out.err == ""
    body = server.requests[0].body
    assert (body["seed"], body["top_p"], body["stop"], body["max_tokens"], body["temperature"]) == (
        1, 0.9, ["END"], 32, 0.2
    )


def test_a_stream_retried_midway_ends_the_broken_line_and_says_so(server, capsys):
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Half"}), CUT),
                   oa_text("Whole"))
    code = main(["run", "--provider", "openai", "--base-url", f"{server.url}/v1", "--model", "m",
                 "-c", "max_retries=1", "-c", "max_retry_wait_s=0", "hi"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "Half\nWhole\n"
    assert "[retry] the answer broke off" in err


def test_seed_flag_reaches_the_wire(server, capsys):
    server.enqueue(oa_text("ok"))
    assert main(["run", "--provider", "openai", "--base-url", f"{server.url}/v1", "--seed", "7", "hi"]) == 0
    assert server.requests[0].body["seed"] == 7


def test_a_value_of_the_wrong_type_is_one_error_line_and_nothing_is_sent(server, capsys):
    code = main(["run", "--provider", "openai", "--base-url", f"{server.url}/v1", "-c", "seed=one", "hi"])
    err = capsys.readouterr().err
    assert code == 2 and server.requests == []
    assert err.count("\n") == 1 and "'seed'" in err and "integer" in err


def test_a_config_error_is_printed_once(capsys):
    assert main(["run", "-c", "echo_prefix=3", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("echo_prefix") == 1 and err.count("\n") == 1


def test_a_typo_in_a_config_key_is_pointed_out_once_and_the_run_goes_on(capsys):
    assert main(["run", "-c", "max_token=5", "hi"]) == 0
    out = capsys.readouterr()
    assert out.out == "Echo: hi\n"
    assert out.err == (
        "warning: config key `max_token` is not declared by any installed plugin; did you mean `max_tokens`? "
        "(plugin 'anthropic' declares it in its config schema, and runs on its default until the key is spelt so) (set by -c)\n"
    )


def test_a_typo_under_strict_config_is_an_error(capsys):
    assert main(["run", "-c", "strict_config=true", "-c", "max_token=5", "hi"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "did you mean `max_tokens`?" in out.err


def test_the_json_mode_start_event_carries_the_warning(capsys):
    assert main(["run", "--json", "-c", "max_token=5", "hi"]) == 0
    out = capsys.readouterr()
    start = json.loads(out.out.splitlines()[0])
    assert start["type"] == "start" and "max_token" in start["warnings"][0]


def test_tool_flag_offers_a_python_function_to_the_model(server, capsys, tmp_path, monkeypatch):
    (tmp_path / "cli_tool_module_for_test.py").write_text(
        "def add_numbers(a: int, b: int = 0) -> int:\n"
        '    """Add two whole numbers.\n\n    More text the model does not need."""\n'
        "    return a + b\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    arguments = '{"a": 2, "b": 3}'
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "add_numbers", "arguments": arguments}}
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [call]}), oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("It is 5."),
    )
    code = main([
        "run", "--provider", "openai", "--base-url", f"{server.url}/v1",
        "--tool", "cli_tool_module_for_test:add_numbers", "add 2 and 3",
    ])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out == "It is 5.\n" and "[tool] add_numbers -> Result: 5" in out.err
    (tool,) = server.requests[0].body["tools"]
    assert tool["function"] == {
        "name": "add_numbers",
        "description": "Add two whole numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a"],
        },
    }
    assert server.requests[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "Result: 5"}


@pytest.mark.parametrize(
    ("spec", "words"),
    [("no_colon", "MODULE:FUNCTION"), ("no_such_module_xyz:f", "cannot import"), ("json:no_such_fn", "no attribute"),
     ("json:JSONDecoder", "is a class; --tool takes a plain function"),
     ("agent_core_plugins.files:FilesTool", "looks like a tool plugin")],
)
def test_a_bad_tool_flag_is_one_clear_error(capsys, spec, words):
    assert main(["run", "--tool", spec, "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def line_of(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.split()[1] == name)


def test_plugins_shows_thinking_on_with_anthropic_and_the_budget_that_asks_for_it(capsys):
    # on whatever the budget (blocks that arrive are kept); the budget shown says whether it asks
    assert main(["plugins", "--provider", "anthropic"]) == 0
    line = line_of(capsys.readouterr().out, "anthropic_thinking")
    assert " on: " in line and "thinking_budget=0" in line
    assert main(["plugins", "--provider", "anthropic", "-c", "thinking_budget=2048"]) == 0
    line = line_of(capsys.readouterr().out, "anthropic_thinking")
    assert " on: " in line and "thinking_budget=2048" in line


def test_plugins_shows_settings_with_secrets_redacted(capsys):
    assert main(["plugins", "--provider", "openai", "--api-key", "sk-cli-Vx81Qp2Lm", "--max-tokens", "64"]) == 0
    out = capsys.readouterr().out
    line = line_of(out, "openai")
    assert "api_key=<redacted>" in line and "max_tokens=64" in line and "sk-cli" not in out
    assert line_of(out, "echo").endswith("off: not the selected provider")


def test_a_function_tool_runs_sync_and_async_functions_and_reports_their_errors():
    import asyncio

    from agent_core import AgentCore, Message
    from agent_core.testing import reply, scripted_provider, tool_call
    from agent_core.tools.function import function_tool

    def divide(a: float, b: float) -> float:
        return a / b

    async def shout(text: str) -> str:
        await asyncio.sleep(0)
        return text.upper()

    calls = [tool_call("divide", {"a": 1, "b": 4}), tool_call("shout", {"text": "hi"}),
             tool_call("divide", {"a": 1, "b": 0}, id="call_zero")]
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=calls), "done")],
                     tools=[function_tool(divide), function_tool(shout)])
    session = core.add_message(core.create_session(), Message("user", "go"))

    async def run():
        return await core.arequest(session)

    for result in (core.request(session), asyncio.run(run())):
        results = [m for m in result.final_messages if m.role == "tool"]
        assert [m.tool_result["success"] for m in results] == [True, True, False]
        assert [m.tool_result.get("result") for m in results[:2]] == [0.25, "HI"]
        assert "ZeroDivisionError" in results[2].content


def test_exit_codes_tell_a_failed_request_from_a_mistake_in_what_was_asked(server, capsys):
    """1: the request ran and failed (here the API answered 500); 2: it could not run as given."""
    from providers._server import json_reply

    server.enqueue(json_reply({"error": {"message": "boom", "type": "server_error"}}, status=500))
    assert main(["run", "--provider", "openai", "--base-url", f"{server.url}/v1", "-c", "max_retries=0",
                 "hi"]) == 1
    assert main(["run", "--provider", "opneai", "hi"]) == 2
    capsys.readouterr()


def test_a_model_without_a_provider_is_pointed_out(capsys):
    assert main(["run", "--model", "gpt-4o-mini", "hi"]) == 0
    out = capsys.readouterr()
    assert out.out == "Echo: hi\n"
    assert "model 'gpt-4o-mini' is set but no provider is" in out.err and "--provider" in out.err
    assert main(["run", "hi"]) == 0 and "warning" not in capsys.readouterr().err


def test_a_base_url_without_a_scheme_is_a_config_error_not_a_retried_network_error(capsys):
    code = main(["run", "--no-log", "--provider", "openai", "--base-url", "127.0.0.1:8080/v1", "--api-key", "sk-x",
                 "hi"])
    err = capsys.readouterr().err
    assert code == 2 and "[retry]" not in err and err.count("\n") == 1
    assert "config key 'base_url' must start with http:// or https:// (did you mean 'http://127.0.0.1:8080/v1'?)" in err


def test_an_unreachable_api_is_named_by_its_origin_only(capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["run", "--no-log", "--provider", "openai", "--base-url", f"http://u:pw@127.0.0.1:{port}/v1?k=secret",
                 "--api-key", "sk-x", "-c", "max_retries=0", "hi"])
    err = capsys.readouterr().err
    assert code == 1 and f"could not reach the API at http://127.0.0.1:{port} (ConnectError" in err
    assert "pw" not in err and "secret" not in err


def test_a_base_url_without_a_scheme_that_may_hold_a_key_is_not_quoted(capsys):
    for url in ("example.test/v1?api-key=sk-hidden-123", "user:sk-hidden-123@example.test/v1"):
        code = main(["run", "--no-log", "--provider", "openai", "--base-url", url, "--api-key", "sk-x", "hi"])
        err = capsys.readouterr().err
        assert code == 2 and "must start with http:// or https://" in err and "sk-hidden-123" not in err, err
