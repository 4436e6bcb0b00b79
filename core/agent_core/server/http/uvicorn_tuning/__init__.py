"""``agent-core serve``'s tuning of uvicorn: optional, checked, and the only code that touches uvicorn's internals.

What it adds to stock uvicorn, per HTTP/1.1 connection (:mod:`.protocol`):

* a deadline for a request's head (``header_timeout_s``): stock uvicorn never times out a
  client that sends its headers a byte at a time;
* writes coalesced into one socket send per loop turn (:mod:`.coalesce`);
* a streamed body's middle parts framed as chunks without h11, offered to the app as the
  ``agent_core.body_send`` / ``agent_core.body_write`` extensions
  (:mod:`agent_core.server.http.event_stream`);
* the client's hang-up told to the routes by the connection, as the ``agent_core.on_hangup``
  extension (:mod:`.hangup`, :func:`agent_core.server.http.wire.watch_hangup`).

The app (:func:`agent_core.server.create_app`) needs none of it: without the extensions each
route takes the ASGI way (every body part through ``send``, a task waiting on ``receive`` for
``http.disconnect``), so it runs the same under stock uvicorn or another ASGI server, slower.

The uvicorn internals it relies on, none of them public API:

* ``uvicorn.protocols.http.h11_impl.H11Protocol``, subclassed and passed as uvicorn's ``http=``
  option: its ``connection_made``, ``handle_events``, ``on_response_complete`` and
  ``connection_lost`` overridden; its ``loop``, ``transport`` and ``cycle`` read;
* ``RequestResponseCycle`` (the ``cycle``): its ``send`` replaced per request, and its
  ``scope``, ``transport``, ``flow``, ``default_headers``, ``disconnected``,
  ``response_started`` and ``response_complete`` read;
* ``uvicorn.protocols.http.flow_control.FlowControl.write_paused``, read.

It was written and tested for uvicorn 0.29 up to, not including, 0.55 (:data:`.compat.TESTED`).
:func:`http_option` checks the installed version (its distribution's metadata) and those
internals; for any other uvicorn it logs one warning and answers uvicorn's default protocol,
and the server runs stock: the same answers, more CPU per streamed chunk, and no header
deadline (uvicorn has no equivalent; its ``timeout_keep_alive`` only closes an idle
kept-alive connection). Only :func:`agent_core.server.serve` enters here.
"""

from __future__ import annotations

import logging
from typing import Any

from .compat import why_not_tuned

__all__ = ["http_option"]

#: uvicorn's own value of its ``http=`` option: its default HTTP/1.1 protocol, picked by uvicorn
STOCK = "auto"


def http_option(header_timeout_s: float, *, version: str | None = None) -> Any:
    """The value of uvicorn's ``http=`` option: the tuned protocol class, or :data:`STOCK` with a warning logged.

    ``version`` is the uvicorn version to judge (default: the installed one's).
    """
    reason = why_not_tuned(version)
    if reason is not None:
        from ..access_log import log_event

        log_event(logging.WARNING, "uvicorn_untuned",
                  f"serving on stock uvicorn, slower and without the {header_timeout_s:g} s header deadline "
                  f"(--header-timeout): {reason}", reason=reason)
        return STOCK
    from .protocol import with_header_timeout

    return with_header_timeout(header_timeout_s)
