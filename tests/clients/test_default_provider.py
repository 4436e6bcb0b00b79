"""A bare model name (``gpt-4o-mini``) through a gateway whose operator set a default provider.

Clients that cannot add a provider prefix, or that spend their own prefix on routing
(LiteLLM's ``openai/`` means "an OpenAI-compatible server"), name the model as the upstream
does. The operator says which provider such names go to: ``agent-core serve
--default-provider openai``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ._answers import Chat
from ._gateway import Gateway
from ._kit import HI, TIMEOUT, need
from ._upstream import Upstream

pytestmark = pytest.mark.clients


def test_the_openai_sdk_names_the_model_as_the_upstream_does(default_gateway: Gateway, upstream: Upstream) -> None:
    openai = need("openai")
    upstream.play(Chat("Hello from the default provider."))
    sdk = openai.OpenAI(base_url=default_gateway.openai_url, api_key="sk-client-unused", max_retries=0,
                        timeout=TIMEOUT)
    reply = sdk.chat.completions.create(model="gpt-4o-mini", messages=HI)
    assert reply.choices[0].message.content == "Hello from the default provider."
    assert upstream.calls()[0].body["model"] == "gpt-4o-mini"


def test_litellm_needs_only_its_own_prefix(default_gateway: Gateway, upstream: Upstream) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm: Any = need("litellm")
    upstream.play(Chat("Hello from the default provider."))
    reply = litellm.completion(model="openai/gpt-4o-mini", messages=HI, api_base=default_gateway.openai_url,
                               api_key="sk-client-unused", max_retries=0, num_retries=0, timeout=TIMEOUT)
    assert reply.choices[0].message.content == "Hello from the default provider."
    assert upstream.calls()[0].body["model"] == "gpt-4o-mini"
