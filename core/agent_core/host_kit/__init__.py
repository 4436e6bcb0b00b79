"""The host kit: what code that hosts the engine needs, beside the kernel's public face.

Semi-public. A plugin never needs these names (it builds with :mod:`agent_core.plugin_kit`);
the testing kit, the session store and the server do, because they run parts of a request
themselves or read what the engine keeps for itself: the testing kit's harness runs a
plugin's chunks as the engine does (:class:`HotLoop`, the config a schema gives, the closing
step's view of the natives) and checks a plugin's answers in the engine's words; the store
keys a session's stored native history; the server knows which config keys the engine
reads and which a client may set. They live in one named place so that those packages reach
no deeper into the kernel than this, and so that a change to any of them is a change here,
seen. Names here may change between minor versions, with a line in the changelog; a
third party hosting the engine its own way may use them on those terms.

Like the plugin kit it sits on top of the kernel: it may import any kernel room, and no
kernel room imports it.
"""

from ..engine.hot_loop import HotLoop
from ..plugins.config import ENGINE_KEYS, effective_config, parse_schema
from ..plugins.config_policy import DEFAULT_CLIENT_KEYS
from ..plugins.finals_check import final_fault
from ..plugins.native_view import NativeView, misread_natives, viewing
from ..runtime.drivers import complete_async, complete_sync
from ..runtime.effects import CancellationToken
from ..plugins.ui_elements import ui_element_fault
from ..tools.policy import read_verdict
from ..values.native_history import prefix_digest, without_native_history
from ..values.request_config import RequestConfig

__all__ = [
    # running a plugin's hooks as a request does (the testing kit's harness)
    "CancellationToken", "HotLoop", "NativeView", "RequestConfig", "effective_config", "parse_schema", "viewing",
    # checking a plugin's answers in the engine's words (the testing kit's contract checks)
    "final_fault", "misread_natives", "read_verdict", "ui_element_fault",
    # the config keys the engine reads itself, and those a client may set unless told otherwise (the server)
    "DEFAULT_CLIENT_KEYS", "ENGINE_KEYS",
    # a flow of effects run for its value, sync or on an event loop (the store's lease wait)
    "complete_async", "complete_sync",
    # which stored native history a session continues, and a session without that record (the store, the server)
    "prefix_digest", "without_native_history",
]
