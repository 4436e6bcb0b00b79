"""Provider plugins shipped with agent-core (echo, openai, anthropic)."""
