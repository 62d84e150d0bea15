"""The Core <-> Runtime wire protocol, defined once (sans-I/O).

Nothing in this package awaits, opens a socket or reads a clock: it turns bytes into
typed frames and typed frames into bytes, and holds the validators, limits, error codes
and lifecycles both sides share.
"""

from runtime.proto.version import VERSION

__all__ = ["VERSION"]
