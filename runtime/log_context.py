"""The fields every Runtime log line carries while it works for one turn: the session
and the turn (the Run) it serves.

`turn_fields` sets them for a block and for the tasks started inside it (a task copies
the context it was created in): the dispatcher sets them around each frame that
belongs to a Run, and a Run sets them on the task that drives its harness, so a line
logged by an executor or a harness adapter that never sees the ids still names them.
`Fields`, a logging filter installed on the process's handlers (by the composition
root), copies them onto each record as attributes, which the log formatter writes as
fields (`session_id=... turn_id=...`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

_FIELDS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "corebox_runtime_log_fields", default=None
)


@contextlib.contextmanager
def turn_fields(session_id: str, turn_id: str = "") -> Iterator[None]:
    """Within this block, every log line names the session and (when known) the turn."""
    fields = {"session_id": session_id}
    if turn_id:
        fields["turn_id"] = turn_id
    token = _FIELDS.set(fields)
    try:
        yield
    finally:
        _FIELDS.reset(token)


def current() -> dict[str, str]:
    """The fields in force here (empty outside any turn)."""
    return dict(_FIELDS.get() or {})


class Fields(logging.Filter):
    """Copies the fields in force onto each record it sees (a field the record already
    has, from `extra=`, is kept). `install` puts it on a logger's handlers."""

    def __init__(self) -> None:
        super().__init__()
        self._handlers: list[logging.Handler] = []

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in current().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True

    def install(self, logger: logging.Logger | None = None) -> None:
        """Filter every handler of `logger` (the root logger by default)."""
        for handler in (logger or logging.getLogger()).handlers:
            if self not in handler.filters:
                handler.addFilter(self)
                self._handlers.append(handler)

    def uninstall(self) -> None:
        for handler in self._handlers:
            handler.removeFilter(self)
        self._handlers.clear()
