"""The plugin kit: everything a plugin author (and every bundled plugin) builds with, in one public place.

A plugin needs more than the hook contract: a way to find markers in text cut at any
point, to accumulate streamed text cheaply, to replace a final message, the names of
the tool formats, and, for code that does I/O, the effects and the two drivers that run
one generator both sync and async. They live here so that bundled plugins, features,
the store, the server and the testing kit import only :mod:`agent_core`, this kit and
the public provider modules, as a third party's plugin would. The kit sits on top of
the kernel: it may import any kernel room, and no kernel room imports it.
"""

from ..runtime.effects import Call, CancellationToken, EffectCancelled, EffectTimeout, drive_async, drive_sync

__all__ = ["Call", "CancellationToken", "EffectCancelled", "EffectTimeout", "drive_async", "drive_sync"]
