"""Helpers the client tests share: importing a client or skipping with the reason, and constants."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import pytest

__all__ = ["HI", "MODEL", "TIMEOUT", "WEATHER_TOOL", "anthropic_client", "need", "required"]

#: How every test names the model: provider prefix, then the upstream's model id.
MODEL = "openai/gpt-4o-mini"
#: Seconds a client waits for the gateway; a gateway that sits on an error fails the test this fast.
TIMEOUT = 10.0
HI = [{"role": "user", "content": "Say hello."}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}

#: Clients the ``clients`` extra installs; ``AGENT_CORE_CLIENTS=required`` turns their absence into a failure.
IN_THE_EXTRA = frozenset({"openai", "anthropic", "litellm", "langchain_openai", "langchain_anthropic", "pydantic_ai",
                          "agents", "llm"})


def required() -> bool:
    """Whether the tier must run rather than skip (``AGENT_CORE_CLIENTS=required``, as CI would set)."""
    return os.environ.get("AGENT_CORE_CLIENTS", "").strip().lower() == "required"


def need(module: str, why: str = "") -> ModuleType:
    """Import a client's module, or skip the test saying what to install.

    A client of the ``clients`` extra fails instead when ``AGENT_CORE_CLIENTS=required``; one that
    cannot share that environment (``why`` says why) always skips.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = why or f"{module} is not installed (pip install -e '.[test,test-clients]'): {exc}"
        if required() and module.partition(".")[0] in IN_THE_EXTRA:
            pytest.fail(f"client tier required (AGENT_CORE_CLIENTS=required) but {reason}", pytrace=False)
        pytest.skip(reason)


def error_fields(error: Any) -> dict[str, Any]:
    """The four fields of an OpenAI error object (a dict), for comparing with the upstream's."""
    return {key: error.get(key) for key in ("message", "type", "param", "code")}


def anthropic_client(gateway: Any) -> Any:
    """The ``anthropic`` SDK's client for ``gateway``, as the tests use it: no retries of its own, the tier's timeout."""
    return need("anthropic").Anthropic(base_url=gateway.url, api_key="sk-ant-client-unused", max_retries=0,
                                       timeout=TIMEOUT)
