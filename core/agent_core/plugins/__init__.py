"""What a plugin is and how the engine picks and calls plugins.

The hook contract as one table (:mod:`.contract`), the protocols and base classes built
from it (:mod:`.protocols`, :mod:`.base`, :mod:`.tool_protocol`), tool interop
(:mod:`.tool_interop`), registered plugins and the one way their hooks are called
(:mod:`.hooks`), their config (:mod:`.config`, :mod:`.config_policy`), tag-based
enablement (:mod:`.selection`, :mod:`.resolution`), the conversion chains
(:mod:`.chains`), actions and lifecycle points (:mod:`.lifecycle`) and the narrow face of
the engine plugins are handed (:mod:`.core`). It imports :mod:`agent_core.errors`,
:mod:`agent_core.values` and :mod:`agent_core.runtime`, never the tools or the engine.
"""
