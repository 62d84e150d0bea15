"""Tier-1 protocol tests: frames in, results out. No event loop, no sockets, no clock."""
