"""What every plugin kind shares: identity, config and UI hooks, and duck-typed ``isinstance``.

Also the tag-gate hooks (:class:`TagGatedPlugin`) that every kind but the
provider has. See :mod:`agent_core.plugins.protocols` for the kinds themselves.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable

__all__ = ["BasePlugin", "Dict", "Msgs", "TagGatedPlugin"]

Dict = dict[str, Any]
Msgs = list[dict[str, Any]]


class _DuckProtocolMeta(type(Protocol)):  # type: ignore[misc]
    """Protocol metaclass whose isinstance/issubclass look only at ``__duck__``.

    ``__duck__`` is a tuple of requirements; each is an attribute name or a
    tuple of names of which one must exist. Non-protocol subclasses (the
    ``Base*`` classes) keep ordinary nominal checks.
    """

    def _duck_ok(cls, obj: Any) -> bool:
        for need in cls.__duck__:
            names = need if isinstance(need, tuple) else (need,)
            if not any(hasattr(obj, n) for n in names):
                return False
        return True

    def __instancecheck__(cls, obj: Any) -> bool:
        if cls.__dict__.get("_is_protocol"):
            return cls._duck_ok(obj)
        return super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub: Any) -> bool:
        if cls.__dict__.get("_is_protocol"):
            return isinstance(sub, type) and cls._duck_ok(sub)
        return super().__subclasscheck__(sub)


@runtime_checkable
class BasePlugin(Protocol, metaclass=_DuckProtocolMeta):
    """Identity, configuration and UI hooks shared by every plugin kind.

    ``name`` is the plugin id used in ``enabled_plugins`` and friends (the
    class name when absent); ``priority`` orders a chain (lower first,
    default 100); ``default_enabled = False`` makes a plugin opt-in.
    """

    __duck__ = ("name",)

    name: str
    version: str

    def get_config_schema(self) -> Dict:
        """Describe this plugin's config keys.

        Either the flat form ``{"key": {"type": "string", "default": ...}}``
        or a JSON Schema object with ``properties``. The engine fills in
        defaults and type-checks the request config against it. Mark a
        credential ``"secret": true`` (or ``"format": "password"``): only
        this plugin then gets its value; every other reader sees
        ``"<redacted>"``. Keys no installed plugin declares are reported.
        """
        return {}

    def get_ui_elements(self, config: Dict, context: Optional[Dict] = None) -> Msgs:
        """UI element dicts for applications (settings, footers, status bars).

        ``context`` carries ``tags``, ``models``, ``available_tools`` and
        ``tools``. The legacy shapes ``()``, ``(config)``,
        ``(config, tags, models)`` and ``(config, tags, models, context)``
        are also accepted.
        """
        return []


class TagGatedPlugin(BasePlugin, Protocol):
    """The hooks that switch a plugin on or off for a request (every kind but the provider).

    Declared once here for extensions, features and tools (the contract's
    ``_GATE`` group); the provider is chosen by config, never gated by tags.
    """

    def required_tags(self) -> list[str]:
        """Tags that must all be present for this plugin to run."""
        return []

    def forbidden_tags(self) -> list[str]:
        """Tags any one of which switches this plugin off."""
        return []

    def is_enabled(self, config: Dict, tags: list[str], models: Msgs, context: Dict) -> Optional[bool]:
        """True/False to decide outright; None to fall back to the tag rules."""
        return None

    def get_tags(self, config: Dict, models: Msgs) -> list[str]:
        """Tags this plugin contributes while enabled."""
        return []
