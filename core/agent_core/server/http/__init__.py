"""The HTTP edge: what every route stands on, and how the bytes meet the connection.

Reading a request once (bodies into typed values, ids from headers), the failure of a
request in the shape of its API, the SSE frames and the streamed response that sends
them, the access log, the trace context, the start banner, the cycle collector's setting,
and the tuning of uvicorn's connection (:mod:`.uvicorn_tuning`). Nothing here knows a
route: the wings (``access``, ``facades``, ``sessions``, ``console``) stand on it.
"""
