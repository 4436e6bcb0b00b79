"""Closing the connection pools the HTTP providers share.

Provider instances live for one request, so their connections are pooled
per ``(base_url, timeout)`` at module level and reused by later requests.
The sync pool is closed at interpreter exit, an event loop's async pool when
the loop shuts down its async generators (``asyncio.run`` does); call these
to close earlier (e.g. in a server's shutdown hook).
"""

from ._pool import aclose_clients, close_clients

__all__ = ["aclose_clients", "close_clients"]
