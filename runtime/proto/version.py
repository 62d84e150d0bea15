"""The wire version of the Core <-> Runtime protocol.

It is independent of the build version a Runtime reports in its heartbeat. Core accepts
only an exact string match, patch component included.
"""

VERSION = "1.0.0"


def is_compatible(version: str) -> bool:
    """Return True only for the exact wire version this build speaks."""
    return version == VERSION
