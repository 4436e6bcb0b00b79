"""``check_plugin(kind="provider")`` sends a provider canned answers through its ``using(...)`` seam.

The guide's ``Lines`` passes; copies of it with one mistake each fail with a
message naming the provider, the case and the fix.
"""

from __future__ import annotations

import json

import httpx
import pytest
from agent_core.errors import ProviderUnavailableError, RateLimitError
from agent_core.testing import PluginContractError, check_plugin
from guide_snippets import guide_module


Lines = guide_module("lines_provider.py").Lines
SAMPLES = {
    "streamed": '{"text": "Hel"}\n{"text": "lo"}\n{"done": true, "tokens": 2}\n',
    "answer": json.dumps({"text": "Hello", "tokens": 2}),
    "finals": [{"role": "assistant", "content": "hi"}],
}


def test_the_guides_provider_passes_every_case():
    check_plugin(Lines, kind="provider", samples=SAMPLES)


class Flawed(Lines):
    """Lines sending and reading without the failures helpers; ``check`` says what an error status becomes."""

    def check(self, response):
        if response.status_code >= 400:
            raise ProviderUnavailableError("failed", provider="lines", status_code=response.status_code)

    def stream_api(self, native_messages, state):
        with self.client.stream("POST", state["url"], json=self.body(native_messages, state, True)) as response:
            response.read() if response.status_code >= 400 else None
            self.check(response)
            for line in response.iter_lines():
                if line.strip():
                    yield json.loads(line)

    def call_api(self, native_messages, state):
        response = self.client.post(state["url"], json=self.body(native_messages, state, False))
        self.check(response)
        answer = response.json()
        return [], [], native_messages, {**state, "text": answer["text"], "calls": [], "tokens": answer["tokens"]}


class Untyped(Flawed):
    def check(self, response):
        if response.status_code >= 400:
            raise Exception(f"HTTP {response.status_code}")


class NoRetryAfter(Flawed):
    def check(self, response):
        if response.status_code == 429:
            raise RateLimitError("slow down", provider="lines", status_code=429)
        super().check(response)


class Typed(Flawed):
    """Every status right, the upstream account too, but a cut stream escapes as httpx's own error."""

    def check(self, response):
        from agent_core_providers.failures import raise_for

        raise_for(response, "lines")


class Unreadable(Lines):
    """Maps statuses right, then misreads every 200 answer."""

    def process_chunk(self, chunk, native_messages, state):
        return [], [], native_messages, {**state, "text": chunk["txt"]}


@pytest.mark.parametrize(("provider", "said"), [
    (Untyped, ["a 429: raised Exception", "untyped", "agent_core_providers.failures.raise_for"]),
    (NoRetryAfter, ["retry_after=None", "RateLimitError(retry_after=...)"]),
    (Flawed, ["a 429 became ProviderUnavailableError, not RateLimitError"]),
    (Typed, ["a stream cut after its first part: raised RemoteProtocolError", "translated(provider)"]),
    (Unreadable, ["KeyError"]),
], ids=["untyped", "no-retry-after", "wrong-class", "cut-stream", "misread-200"])
def test_each_mistake_is_named_with_its_fix(provider, said):
    with pytest.raises(PluginContractError) as got:
        check_plugin(provider, kind="provider", samples=SAMPLES)
    assert got.value.plugin == "lines"
    for words in said:
        assert words in str(got.value)


def test_a_500_without_the_upstream_account_is_named():
    class NoUpstream(Flawed):
        def check(self, response):
            if response.status_code == 429:
                raise RateLimitError("slow", provider="lines", status_code=429, retry_after=7)
            if response.status_code == 401:
                from agent_core.errors import AuthenticationError

                raise AuthenticationError("no", provider="lines", status_code=401)
            super().check(response)

    with pytest.raises(PluginContractError, match=r"a 500 became ProviderUnavailableError .*upstream=None.*"
                                                  r"UpstreamDetail\(status=500"):
        check_plugin(NoUpstream, kind="provider", samples=SAMPLES)


def test_a_provider_without_samples_still_meets_the_failures():
    with pytest.raises(PluginContractError, match="a 429: raised Exception"):
        check_plugin(Untyped, kind="provider", samples={"finals": SAMPLES["finals"]})
    assert httpx  # the seam is httpx's own MockTransport: nothing left the process
