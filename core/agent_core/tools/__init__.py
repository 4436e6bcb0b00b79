"""Tools in a request: the catalog, routing a call, running it, and the policy around it.

:mod:`.kit` sets up one request's tools (:meth:`~.kit.ToolKit.for_request`: catalog,
prepare, interop, formats, adapt) from the pieces in :mod:`.toolkit` (catalog, schemas in
the provider's format, reading and routing calls), :mod:`.execute` runs one call and formats its result,
:mod:`.policy` decides with ``tool_pre``/``tool_post`` and approvals (:mod:`.approval`),
:mod:`.loop` runs a turn's calls, :mod:`.api` offers the same outside a request, and
:mod:`.function` turns a plain Python function into a tool plugin. It imports the layers
below it (errors, values, runtime, plugins), never the engine.
"""
