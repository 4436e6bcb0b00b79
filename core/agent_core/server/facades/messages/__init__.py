"""Anthropic's Messages API (``/v1/messages`` and its ``count_tokens``) over the pipeline."""
