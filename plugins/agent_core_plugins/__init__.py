"""Provider-extension and tool plugins shipped with agent-core."""
