"""The Core <-> Runtime wire protocol, defined once (sans-I/O).

Nothing in this package awaits, opens a socket or reads a clock: it turns bytes into
typed frames and typed frames into bytes, and holds the validators, limits, error codes
and lifecycles both sides share. `codec` has one typed decoder per direction and the
encoder; `strictness` declares each direction's decode policy; the other modules hold
one message family each (`execution`, `run`, `interactions`, `workspace`, ...), and
`scenarios/` the wire scenarios both sides replay.

It may import the standard library, `msgspec` and `runtime.proto.*` only: Core imports
it too, and it must stay free of either side's I/O and state.
"""

from runtime.proto.version import VERSION

__all__ = ["VERSION"]
