"""Harness adapters: the interface, the registry and the adapters themselves."""
