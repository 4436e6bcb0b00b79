"""agent-core's HTTP/1.1 client transport, entered only through httpx's public transport seam.

``httpx.Client(transport=LeanTransport())`` and
``httpx.AsyncClient(transport=AsyncLeanTransport())`` are the only ways in: httpx
hands over an ``httpx.Request`` (``handle_request`` / ``handle_async_request``)
and gets back an ``httpx.Response``. Nothing here reads or writes a private name
of httpx or httpcore; httpcore appears only through its public network-stream
interfaces and error classes.

What it owes, as an implementation of HTTP/1.1 under httpx (proven against h11,
httpx's own parser, as the oracle: ``tests/providers/test_head.py``,
``test_framing.py``, ``test_transport_seam.py``, and the hostile upstream of
``test_hostile_upstream.py``, each case also run on stock httpx):

- **The request** goes out as httpx built it: method, target, headers in their
  order and case, the body framed by its ``Content-Length`` or chunked; a header
  value holding CR or LF is refused before a byte is sent.
- **The response head** is read with h11's grammar and refusals: a bad status
  line, a header without a colon, conflicting ``Content-Length`` values, a
  ``Transfer-Encoding`` other than ``chunked``, a head over 100 KiB; 1xx heads are
  skipped; obs-fold is joined; HTTP/1.0 is answered as such.
- **The body** is framed as h11 frames it: ``Content-Length``, chunked (sizes of
  up to 20 hex digits, extensions, trailers), or until close; none after HEAD,
  1xx, 204 and 304. A body that ends early is a ``RemoteProtocolError``, never a
  short answer taken for a whole one.
- **A connection is reused** only after a complete body with nothing after it,
  on a response that allows keep-alive; an idle connection the server closed (or
  sent anything on) is never written to. Bytes after a complete response never
  answer the next request. An origin seen closing connections right after a kind
  of answer (chunked, sized...) without saying so gets a fresh connection per
  request after such answers, instead of a reuse that would meet the close
  (:mod:`.flat_pool`).
- **Timeouts are httpx's**, per request: connect, each write, each read; no
  deadline of one request is carried to the next on a pooled connection.
- **Errors are httpx's** (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...).
- **Nothing above the transport**: redirects, cookies and auth are the client's;
  a 3xx comes back as it came.
"""

from ._seam import BODY, TRANSPORT_ERRORS, AsyncLeanTransport, LeanTransport, as_httpx

__all__ = ["BODY", "TRANSPORT_ERRORS", "AsyncLeanTransport", "LeanTransport", "as_httpx"]
