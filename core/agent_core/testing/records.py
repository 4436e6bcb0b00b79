"""What the harness hands back: each hook call of a stream, the stream's record, a finalize result.

Plain values with ``snapshot_fields`` so an ``agent_snapshot`` shows what a
plugin did in the order it did it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FinalizeResult", "HookCall", "StreamRecord"]


@dataclass(frozen=True)
class HookCall:
    """One hook call of a :meth:`PluginHarness.stream`: what went in and what came out (plain values)."""

    hook: str
    chunk: Any
    inputs: dict[str, Any]
    outputs: dict[str, Any]

    def snapshot_fields(self) -> dict[str, Any]:
        # The state rarely changes per call and is shown once at the end of the record.
        return {
            "hook": self.hook,
            "chunk": self.chunk,
            "in": {k: v for k, v in self.inputs.items() if k != "state"},
            "out": {k: v for k, v in self.outputs.items() if k != "state"},
        }


@dataclass(frozen=True)
class StreamRecord:
    """What a stream did: every call, the joined partial text, every final, the last native history and state."""

    calls: tuple[HookCall, ...]
    text: str
    finals: list[Any]
    native_messages: list[Any]
    state: dict[str, Any] = field(default_factory=dict)

    def snapshot_fields(self) -> dict[str, Any]:
        return {"calls": list(self.calls), "text": self.text, "finals": self.finals,
                "native_messages": self.native_messages, "state": self.state}


@dataclass(frozen=True)
class FinalizeResult:
    """What ``finalize`` returned (plain values)."""

    finals: list[Any]
    native_messages: list[Any]
    state: dict[str, Any]
