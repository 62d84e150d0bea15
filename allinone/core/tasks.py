"""Stopping a child task without losing the caller's own cancellation.

`contextlib.suppress(asyncio.CancelledError)` around `await child` cannot tell the child's
cancellation from the awaiting task's: when the caller is itself cancelled while it
waits, the suppression swallows that and the caller carries on as if nothing happened.
`cancel_and_wait` waits with `asyncio.wait`, which never raises the child's outcome, so
the only `CancelledError` that can leave it is the caller's own, and it always does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Future[Any], timeout: float | None = None) -> bool:
    """Cancel `task` and wait up to `timeout` seconds (None: no bound) for it to end.

    Returns True when the task has ended. The task's own outcome (its cancellation or an
    exception it ended with) is consumed here, an exception logged; a `CancelledError`
    aimed at the caller propagates unchanged."""
    task.cancel()
    if not task.done():
        await asyncio.wait({task}, timeout=timeout)
    if not task.done():
        return False
    if not task.cancelled():
        exc = task.exception()
        if exc is not None:
            name = task.get_name() if isinstance(task, asyncio.Task) else "future"
            log.warning("task %s ended with %r while being stopped", name, exc)
    return True


__all__ = ["cancel_and_wait"]
