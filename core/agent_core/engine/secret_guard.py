"""A declared secret's value never reaches a session: looked for once per provider call, never per chunk.

Only the plugin that declares a secret key (``"secret": true``, or a credential's
name) is handed its value; every other plugin, the resolved config, events and
errors see ``"<redacted>"``. What a plugin does with the value is beyond that
rule: a provider that keeps its key in the shared state lets any extension or
feature copy it into a final's metadata, and a careless one may put it in a
native message itself. So after each provider call, before a ``final`` event or
the session sees anything, the engine looks for each secret value in what the
call adds: the final core messages, the native history it keeps, and the
session metadata of ``response_finalize`` actions; and in each tool message
before its ``tool_result`` event. A find stops the request with
a :class:`~agent_core.errors.SecretInSessionError` naming the declaring plugin and
the key; the caller's session is left as it was.

Cost: nothing for a request whose plugins declare no secret (the common case
behind ``agent-core serve``, where keys come from the environment, is one secret:
the provider's). Otherwise one JSON encoding of the call's new messages and a
substring search per secret, once per provider call and once per tool result;
the per-chunk path is untouched, so streamed partials (and a streaming tool's
progress parts) are not searched. Values shorter than
:data:`SHORTEST` are not searched: they would match ordinary text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from ..errors import SecretInSessionError
from ..plugins.hooks import LivePlugin
from ..values.messages import Message

__all__ = ["SHORTEST", "SecretGuard"]

#: secret values shorter than this are not searched for (a real key is far longer)
SHORTEST = 8


def _builtin(obj: Any) -> Any:
    return obj._json_view() if isinstance(obj, Message) else str(obj)


_encode = msgspec.json.Encoder(enc_hook=_builtin).encode


class SecretGuard:
    """The secret values a request's plugins were handed, each as JSON text would carry it."""

    __slots__ = ("needles",)

    def __init__(self, plugins: Iterable[LivePlugin]) -> None:
        self.needles = tuple(
            (p.name, key, _encode(value)[1:-1])  # the string's JSON form, without its quotes
            for p in plugins for key, value in p.secrets.items()
            if isinstance(value, str) and len(value) >= SHORTEST
        )

    def check(self, where: str, value: Any, hook: str = "finalize") -> None:
        """Raise if any secret value is in ``value`` (messages, native messages, metadata).

        Raises:
            SecretInSessionError: naming the plugin declaring the secret, the key and ``where``.
        """
        if not self.needles or not value:
            return
        text = _encode(value)
        for plugin, key, needle in self.needles:
            if needle in text:
                raise SecretInSessionError(plugin, key, where, hook)
