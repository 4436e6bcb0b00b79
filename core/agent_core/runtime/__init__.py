"""How plugin code is run: effects and their two drivers, guards against code that blocks, the request in flight.

A request (and any other piece of I/O-bound work) is written once as a generator of
effects (:mod:`.effects`); a sync driver and an async driver (:mod:`.drivers`) carry each
effect out, so the sync and async APIs cannot drift apart. :mod:`.guards` waits on plugin code that may block
or hang (cancellation tokens, time limits, private event loops); :mod:`.flight` is a
request as ``cancel_request`` reaches it. This package imports only :mod:`agent_core.errors`
and :mod:`agent_core.values`.
"""
