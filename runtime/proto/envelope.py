"""The envelope every data frame travels in, and W3C trace handling.

An envelope is one JSON object: `type`, an `id` whose meaning depends on the type, a
typed `payload` and an optional W3C `trace`. The trace is diagnostic only: a missing or
invalid one is replaced by a local trace, it never changes ownership and is never used
as a request ID.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

import msgspec

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


class Envelope(msgspec.Struct, frozen=True, omit_defaults=True):
    type: str
    id: str = ""
    payload: msgspec.Raw = msgspec.Raw()
    trace: str = ""


def is_valid_trace(trace: str) -> bool:
    match = _TRACEPARENT.match(trace)
    if match is None:
        return False
    trace_id, span_id = match.groups()
    return trace_id != "0" * 32 and span_id != "0" * 16


def new_trace(token_hex: Callable[[int], str] = secrets.token_hex) -> str:
    return f"00-{token_hex(16)}-{token_hex(8)}-01"


def ensure_trace(trace: str, token_hex: Callable[[int], str] = secrets.token_hex) -> str:
    """Keep a valid traceparent; replace a missing or invalid one with a local trace."""
    return trace if is_valid_trace(trace) else new_trace(token_hex)
