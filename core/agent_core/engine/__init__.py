"""The engine: ``AgentCore`` and one request, from resolving its plugins to the new session.

:mod:`.core` is the public face (``AgentCore``); :mod:`.run` is one request written once
as a generator of effects, calling :mod:`.hot_loop` for each provider call (the per-chunk
path; :mod:`.retract` when a stream starts over), :mod:`.finalize` after it and the tool loop between calls; :mod:`.request_injection`
adds a feature's context to one call; :mod:`.flow` hands a request to code that drives it
among steps of its own (the store's turns); :mod:`.actions`, :mod:`.calls` and :mod:`.info`
answer outside requests. The engine sits on top: it may import every other kernel package,
and only the store, the server, the CLI and the testing kit import it.
"""

from .core import ActionResult, AgentCore, RequestResult

__all__ = ["ActionResult", "AgentCore", "RequestResult"]
