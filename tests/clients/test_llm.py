"""Simon Willison's ``llm`` (its Python API) against the OpenAI-compatible facade.

``llm`` reaches an OpenAI-compatible server through a model registered in
``extra-openai-models.yaml`` in its user directory (``$LLM_USER_PATH``), exactly as its users do;
it builds its ``openai`` client with the SDK's defaults, two retries included, which makes it
the client that shows whether the gateway multiplies retries.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._answers import CONTEXT_LENGTH_EXCEEDED, INSUFFICIENT_QUOTA, Chat, ToolCall, Usage
from ._gateway import Gateway
from ._kit import MODEL, error_fields, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def llm() -> Any:
    return need("llm")


@pytest.fixture
def model(llm: Any, gateway: Gateway, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The gateway's ``openai/gpt-4o-mini`` as an ``llm`` model named ``agent-core``."""
    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: agent-core\n  model_name: {MODEL}\n  api_base: {gateway.openai_url}\n"
        "  supports_tools: true\n  supports_schema: true\n")
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path))
    return llm.get_model("agent-core")


def test_a_prompt_gives_the_text_and_usage(model: Any, upstream: Upstream) -> None:
    upstream.play(Chat("Hello from upstream.", usage=Usage(14, 37)))
    response = model.prompt("Say hello.", stream=False)
    assert response.text() == "Hello from upstream."
    usage = response.usage()
    assert (usage.input, usage.output) == (14, 37)
    assert upstream.calls()[0].body["model"] == "gpt-4o-mini"


def test_a_streamed_prompt_with_usage(model: Any, upstream: Upstream) -> None:
    upstream.play(Chat("Streaming along nicely.", usage=Usage(9, 5)))
    response = model.prompt("Say hello.")
    pieces = list(response)
    assert "".join(pieces) == "Streaming along nicely." and len(pieces) > 1
    assert (response.usage().input, response.usage().output) == (9, 5)


def test_a_chain_runs_the_tool_between_two_model_calls(llm: Any, model: Any, upstream: Upstream) -> None:
    upstream.play(Chat(tool_calls=(ToolCall("call_m1", "get_weather", '{"city":"Lima"}'),)),
                  Chat("It is 19°C in Lima."))

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"19°C in {city}"

    assert model.chain("Weather in Lima?", tools=[get_weather]).text() == "It is 19°C in Lima."
    sent = upstream.calls()[1].body["messages"]
    assert [m["role"] for m in sent][-2:] == ["assistant", "tool"]
    assert (sent[-1]["tool_call_id"], sent[-1]["content"]) == ("call_m1", "19°C in Lima")


def test_an_exhausted_quota_costs_one_upstream_request_per_client_attempt(model: Any, upstream: Upstream) -> None:
    """llm's client retries a 429 twice by itself: three attempts, so three upstream requests, not nine."""
    openai = need("openai")
    upstream.play(*[INSUFFICIENT_QUOTA] * 12)
    with pytest.raises(openai.RateLimitError) as caught:
        model.prompt("Say hello.", stream=False).text()
    assert caught.value.code == "insufficient_quota"
    assert len(upstream.calls()) == 3


def test_a_context_overflow_is_a_bad_request_with_its_code(model: Any, upstream: Upstream) -> None:
    openai = need("openai")
    upstream.play(CONTEXT_LENGTH_EXCEEDED)
    with pytest.raises(openai.BadRequestError) as caught:
        model.prompt("Say hello.", stream=False).text()
    assert error_fields(caught.value.body) == CONTEXT_LENGTH_EXCEEDED.error
