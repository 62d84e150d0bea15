"""The fields every log line carries while a piece of Core work runs for one turn.

`turn_fields` sets them for a block (and the tasks it starts, which copy the context);
the log formatter of the process (`allinone.logs`) adds them to each line, so a line
logged anywhere below, in a collaborator that never sees the turn, still names it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_FIELDS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "corebox_log_fields", default=None
)


@contextlib.contextmanager
def turn_fields(session_id: str, turn_id: str) -> Iterator[None]:
    """Within this block, every log line names the session and the turn."""
    token = _FIELDS.set({"session_id": session_id, "turn_id": turn_id})
    try:
        yield
    finally:
        _FIELDS.reset(token)


def current() -> dict[str, str]:
    """The fields in force here (empty outside any turn)."""
    return dict(_FIELDS.get() or {})
