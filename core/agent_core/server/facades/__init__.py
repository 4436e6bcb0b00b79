"""The facades: a model API's dialect spoken over the pipeline, one sub-package per dialect.

``chat`` (OpenAI's ``/v1/chat/completions``), ``messages`` (Anthropic's ``/v1/messages``) and
``responses`` (OpenAI's ``/v1/responses``) each hold the same parts: ``dialect`` (the body as
msgspec Structs, what it becomes as a request, the whole answer), ``stream`` (the answer's
frames) and ``facade`` (the :class:`~.protocol.Facade` that names them). One function,
:func:`.runner.run_facade`, runs any facade's turn; what is shared besides (model names,
fitting fields to the provider, the client's tools) lives beside it.
"""
