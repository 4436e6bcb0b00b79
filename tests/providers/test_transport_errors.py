"""Context overflow as each server really words it, replayed over loopback: always ContextLengthError.

Every body below is the shape and wording a real server sends (sources in
the comments: the servers' own code or public issue threads quoting their
answers). APIs report an over-long prompt as a generic 400 (or, llama.cpp,
even a 500), so the wording decides; the caller needs ``ContextLengthError``
to know that shortening the history, not retrying, is the remedy.
"""

from __future__ import annotations

import pytest
from agent_core.errors import ContextLengthError, InvalidRequestError, ProviderUnavailableError

from ._driver import run_turn
from ._server import Reply, json_reply
from .test_transport import ANTHROPIC, OPENAI, USER

CASES = [
    # OpenAI Chat Completions: code context_length_exceeded.
    (
        "openai",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                "204308 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # Anthropic Messages: a plain invalid_request_error whose text says it.
    (
        "anthropic",
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
        },
    ),
    # llama.cpp llama-server (ggml-org/llama.cpp#15780, #19774): type exceed_context_size_error, 400 ...
    (
        "llama.cpp",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 4390,
                "n_ctx": 4096,
            }
        },
    ),
    # ... the same type with code 500 in the builds that introduced it ...
    (
        "llama.cpp-500",
        500,
        {
            "error": {
                "code": 500,
                "message": "the request exceeds the available context size. try increasing the context size or "
                "enable context shift",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 1407,
                "n_ctx": 256,
            }
        },
    ),
    # ... and a bare server_error 500 on some paths (llama.cpp#19774).
    (
        "llama.cpp-server-error",
        500,
        {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}},
    ),
    # vLLM's OpenAI server: a top-level error object, type BadRequestError, integer code.
    (
        "vllm",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 6048 tokens. However, you requested 6616 tokens "
            "(568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    # vLLM V1 engine wording.
    (
        "vllm-v1",
        400,
        {
            "object": "error",
            "message": "The decoder prompt (length 17772) is longer than the maximum model length of 16384.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    # Mistral (docs.mistral.ai, known limitations).
    (
        "mistral",
        400,
        {
            "object": "error",
            "message": "Prompt contains 300000 tokens, too large for model with 131072 maximum context length",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        },
    ),
    # Groq: only the code names it.
    (
        "groq",
        400,
        {
            "error": {
                "message": "Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # DeepSeek: code invalid_request_error, the text names it.
    (
        "deepseek",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 65536 tokens. However, you requested 87731 tokens "
                "(87731 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
    ),
    # Ollama's OpenAI-compatible endpoint (wording as quoted by client libraries' overflow patterns);
    # a compatible server's "api_error" type on a 400 must not turn it into a retried server fault.
    (
        "ollama",
        400,
        {"error": {"message": "prompt too long; exceeded max context length by 4096 tokens", "type": "api_error"}},
    ),
]


@pytest.mark.parametrize(("server_name", "status", "body"), CASES, ids=[c[0] for c in CASES])
def test_context_overflow_wording_is_a_context_length_error(server, server_name, status, body):
    kit = ANTHROPIC if server_name == "anthropic" else OPENAI
    server.enqueue(json_reply(body, status=status), kit.text("never"))
    with pytest.raises(ContextLengthError) as info:
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=2))
    assert info.value.status_code == status and info.value.provider == kit.name
    assert len(server.requests) == 1  # not retried, even as a 500: it would fail again


def test_a_plain_500_is_still_unavailable_and_a_plain_400_still_invalid(server):
    server.enqueue(json_reply({"error": {"message": "too many tokens in flight", "type": "server_error"}}, status=500))
    with pytest.raises(ProviderUnavailableError):
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
    server.enqueue(Reply(400, {"content-type": "text/plain"}, [b"temperature must be <= 2"], chunked=False))
    with pytest.raises(InvalidRequestError):
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server))
