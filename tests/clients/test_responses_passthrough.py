"""The ``openai`` SDK and the OpenAI Agents SDK on ``/v1/responses`` in front of an ``openai_responses`` model.

Where the client's API is the upstream's, what the client writes reaches the upstream as
written and what the upstream answers reaches the client: structured output
(``text.format``), reasoning items with their summaries and, when ``include`` asks,
``encrypted_content``, and those items handed back in the next ``input`` so reasoning carries
across a tool turn with ``store: false``. The scripted upstream refuses, with the API's 400,
any body the real Responses API would refuse, so a body in the wrong shape fails the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._gateway import Gateway
from ._kit import TIMEOUT, need
from ._responses_answers import Recorded, Response
from ._upstream import Upstream

pytestmark = pytest.mark.clients

MODEL = "openai_responses/gpt-5-mini"
TOOL_LOOP = "responses-reasoning-tool-loop.chunks.txt"
CALCULATOR = {"type": "function", "name": "calculator", "description": "Arithmetic.", "strict": True,
              "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                                                              "op": {"type": "string"}},
                             "required": ["a", "b", "op"], "additionalProperties": False}}


def sdk(gateway: Gateway) -> Any:
    return need("openai").OpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                                 timeout=TIMEOUT)


def answer_model() -> Any:
    pydantic = need("pydantic")

    class Answer(pydantic.BaseModel):
        steps: list[str]
        result: int

    return Answer


def test_parse_with_a_pydantic_text_format(gateway: Gateway, upstream: Upstream) -> None:
    Answer = answer_model()
    upstream.play(Response('{"steps":["12 + 7 = 19","19 * 3 = 57","57 * 10 = 570"],"result":570}'))
    parsed = sdk(gateway).responses.parse(model=MODEL, input="(12 + 7) * 3 * 10?", text_format=Answer)
    assert parsed.output_parsed == Answer(steps=["12 + 7 = 19", "19 * 3 = 57", "57 * 10 = 570"], result=570)
    [call] = upstream.calls("responses")
    fmt = call.body["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "Answer", True)
    assert fmt["schema"]["required"] == ["steps", "result"] and call.body["model"] == "gpt-5-mini"
    assert parsed.usage.input_tokens_details.cached_tokens == 64
    assert parsed.usage.output_tokens_details.reasoning_tokens == 16 and parsed.service_tier == "default"


def test_encrypted_reasoning_carries_across_a_tool_turn(gateway: Gateway, upstream: Upstream) -> None:
    first = Recorded(TOOL_LOOP, 0)
    upstream.play(first, Recorded("responses-reasoning.json"))
    client = sdk(gateway)
    history: list[Any] = [{"role": "user", "content": "(12 + 7) * 3 * 10?"}]
    settings = {"tools": [CALCULATOR], "store": False, "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "high", "summary": "detailed"}}
    reply = client.responses.create(model=MODEL, input=history, **settings)
    [thought, call] = reply.output
    recorded = first.items()
    assert thought.model_dump(exclude_none=True) == recorded[0]  # id, summary and encrypted content as sent
    assert call.type == "function_call" and call.call_id == recorded[1]["call_id"]
    history += reply.output  # as the SDK's docs say: hand the output items back
    history.append({"type": "function_call_output", "call_id": call.call_id, "output": "19"})
    final = client.responses.create(model=MODEL, input=history, **settings)
    assert final.output_text.endswith("Final result: 570")
    second = upstream.calls("responses")[1].body
    assert second["input"][1] == recorded[0] and second["store"] is False
    assert second["include"] == ["reasoning.encrypted_content"]
    assert second["reasoning"] == {"effort": "high", "summary": "detailed"}


def test_a_streamed_reasoning_summary(gateway: Gateway, upstream: Upstream) -> None:
    first = Recorded(TOOL_LOOP, 0)
    upstream.play(first)
    with sdk(gateway).responses.stream(model=MODEL, input="(12 + 7) * 3 * 10?", tools=[CALCULATOR],
                                       include=["reasoning.encrypted_content"],
                                       reasoning={"effort": "high", "summary": "detailed"}) as stream:
        summary = "".join(e.delta for e in stream if e.type == "response.reasoning_summary_text.delta")
        final = stream.get_final_response()
    # the item as the stream closed it (the API encrypts it afresh for its response.completed)
    events = [json.loads(line) for line in first.lines()]
    closed = next(e["item"] for e in events if e["type"] == "response.output_item.done")
    assert summary == closed["summary"][0]["text"]
    assert final.output[0].model_dump(exclude_none=True) == closed
    assert json.loads(final.output[1].arguments) == {"a": 12, "b": 7, "op": "add"}


def test_an_agent_with_an_output_type(gateway: Gateway, upstream: Upstream) -> None:
    agents = need("agents")
    agents.set_tracing_disabled(True)  # no traces sent to OpenAI's servers from a test
    Answer = answer_model()
    upstream.play(Response('{"steps":["19 * 30"],"result":570}'))
    client = need("openai").AsyncOpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                                        timeout=TIMEOUT)
    model = agents.OpenAIResponsesModel(model=MODEL, openai_client=client)
    agent = agents.Agent(name="calc", instructions="Compute.", model=model, output_type=Answer)
    result = agents.Runner.run_sync(agent, "(12 + 7) * 3 * 10?")
    assert result.final_output == Answer(steps=["19 * 30"], result=570)
    body = upstream.calls("responses")[0].body
    assert body["text"]["format"]["type"] == "json_schema" and body["text"]["format"]["strict"] is True
    assert body["instructions"] == "Compute."


def test_an_agent_carries_encrypted_reasoning_through_its_tool(gateway: Gateway, upstream: Upstream) -> None:
    agents = need("agents")
    agents.set_tracing_disabled(True)
    from openai.types.shared import Reasoning

    first = Recorded(TOOL_LOOP, 0)
    upstream.play(first, Response("570"))

    @agents.function_tool
    def calculator(a: float, b: float, op: str) -> str:
        """Arithmetic on two numbers."""
        return str(a + b if op == "add" else a * b)

    client = need("openai").AsyncOpenAI(base_url=gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                                        timeout=TIMEOUT)
    settings = agents.ModelSettings(reasoning=Reasoning(effort="high", summary="detailed"), store=False,
                                    response_include=["reasoning.encrypted_content"])
    agent = agents.Agent(name="calc", model=agents.OpenAIResponsesModel(model=MODEL, openai_client=client),
                         tools=[calculator], model_settings=settings)
    result = agents.Runner.run_sync(agent, "(12 + 7) * 3 * 10?")
    assert result.final_output == "570"
    second = upstream.calls("responses")[1].body
    thought = next(i for i in second["input"] if i.get("type") == "reasoning")
    assert thought["encrypted_content"] == first.items()[0]["encrypted_content"]
    assert [i.get("type") for i in second["input"][-2:]] == ["function_call", "function_call_output"]
