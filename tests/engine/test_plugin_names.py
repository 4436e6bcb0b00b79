"""``AgentCore.plugins(kind)``: the names of one kind, under the singular or the plural; anything else refused by name."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore
from agent_core.errors import InvalidArgumentError
from agent_core_providers.echo import EchoProvider


class Quiet:
    name = "quiet"

    def process_chunk(self, native_chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
        return partials, finals, native, state


def test_the_singular_and_the_plural_give_the_same_names() -> None:
    core = AgentCore(providers=[EchoProvider], extensions=[Quiet])
    assert core.plugins("provider") == core.plugins("providers") == ("echo",)
    assert core.plugins("extension") == core.plugins("extensions") == ("quiet",)
    assert core.plugins("feature") == () and core.plugins("tool") == ()


def test_names_follow_a_registration() -> None:
    core = AgentCore(providers=[EchoProvider])
    assert core.plugins("extension") == ()
    core.register_extension(Quiet)
    assert core.plugins("extension") == ("quiet",)


@pytest.mark.parametrize("kind", ["tol", "Provider", "", ["provider"], None, 3])
def test_anything_else_is_refused_by_name(kind: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="no plugin kind"):
        AgentCore(providers=[EchoProvider]).plugins(kind)
