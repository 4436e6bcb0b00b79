"""Text assembled from streamed pieces, and finals replaced in the native history (now in the plugin kit).

The code lives in :mod:`agent_core.plugin_kit` (``pieces`` and ``finals``),
where plugin authors find it; this module keeps the names the bundled
providers and older plugins import from here.
"""

from __future__ import annotations

from agent_core.plugin_kit import Pieces, push, replace_final, text_of

__all__ = ["Pieces", "push", "replace_final", "text_of"]
