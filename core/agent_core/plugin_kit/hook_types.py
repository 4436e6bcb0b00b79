"""Short names for the values hooks take and return, so a signature fits on one line.

Hooks receive frozen values (read them like dicts and lists) and may return
plain ones; these names say which is which in a signature without spelling
out the generic types each time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChunkOutput", "Dict", "Msgs"]

#: a message, a state or a config: a mapping (frozen when handed in)
Dict = dict[str, Any]
#: a list of message mappings (native or core)
Msgs = list[dict[str, Any]]
#: what ``process_chunk`` returns: ``(partial_messages, final_messages, native_messages, state)``
ChunkOutput = tuple[Msgs, Msgs, Msgs, Dict]
