"""OpenAI's Chat Completions (``/v1/chat/completions``) over the pipeline."""
