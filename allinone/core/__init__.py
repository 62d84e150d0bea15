"""Core: the public API, the Runtime gateway, orchestration and durable state."""
