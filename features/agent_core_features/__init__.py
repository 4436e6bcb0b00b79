"""Feature plugins shipped with agent-core."""
