"""OpenAI's Responses API (``/v1/responses``) over the pipeline, stateless."""
