"""Who may do what, and how much: the front door, the tenants, the operator's settings and limits.

:mod:`.guard` admits a request before any route sees it (host, origin, token, slots,
body size); :mod:`.tenants` says whose it is and scopes its ids; :mod:`.settings` holds the
operator's limits; :mod:`.gate` checks the values a client sends by other paths than the
config policy; :mod:`.amounts` counts what a facade body would become before it is built.
"""
