"""A prompt longer than the server's context is a ContextLengthError."""

from __future__ import annotations

import pytest
from agent_core import ContextLengthError

from ._kit import MODES, make_core, run_async, session_with
from .conftest import CTX_PER_SLOT, SLOTS

pytestmark = pytest.mark.live


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("use_async", "stream"), MODES)
def test_prompt_over_the_context_size_is_a_context_length_error(llama, provider, use_async, stream):
    core = make_core()
    # Longer than the whole context, however the server splits it between slots.
    session = session_with(core, "apple " * (CTX_PER_SLOT * SLOTS + 1000))
    config = llama.config(provider, max_tokens=4, stream=stream, max_retries=2)
    with pytest.raises(ContextLengthError) as caught:
        if use_async:
            run_async(core.arequest, session, config)
        else:
            core.request(session, config)
    assert caught.value.provider == provider
    assert caught.value.status_code == 400
