"""A hook that takes the protocol's arguments is called as the plugin's own bound method; the rest through adapters."""

from __future__ import annotations

from typing import Any

from agent_core.plugins.hooks import LivePlugin, call_hook, spec_for


class Extension:
    name = "binding_probe"

    def process_chunk(self, native_chunk: Any, partial_messages: Any, final_messages: Any,
                      native_messages: Any, state: Any) -> Any:  # the whole protocol: called as it is
        return ("whole", native_chunk)

    def finalize(self, final_messages: Any, native_messages: Any, state: Any) -> Any:  # no context: adapted
        return ("narrow", final_messages)

    def get_ui_elements(self, config: Any) -> Any:  # a legacy shape: adapted
        return [{"type": "text", "config": config}]


def test_only_hooks_taking_the_protocols_arguments_are_direct() -> None:
    spec = spec_for("extension", Extension)
    assert "process_chunk" in spec.direct
    assert {"finalize", "get_ui_elements"} <= spec.defined
    assert not {"finalize", "get_ui_elements"} & spec.direct
    assert "init" not in spec.direct and "init" not in spec.defined  # not defined: the protocol's default


def test_direct_and_adapted_hooks_answer_as_bind_does() -> None:
    spec = spec_for("extension", Extension)
    live = LivePlugin(spec, Extension())
    assert call_hook(live, "process_chunk", 1, [], [], [], {}) == ("whole", 1)
    assert live.hook("process_chunk").__self__ is live.instance  # the plugin's own bound method
    assert call_hook(live, "finalize", ["f"], [], {}, context={"x": 1}) == ("narrow", ["f"])  # context dropped
    fresh = LivePlugin(spec, Extension())
    for hook, args, kwargs in (("process_chunk", (2, [], [], [], {}), {}),
                               ("finalize", (["g"], [], {}), {"context": None})):
        assert fresh.hook(hook)(*args, **kwargs) == spec.bind(fresh.instance, hook)(*args, **kwargs)
