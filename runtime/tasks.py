"""Stopping a child task without losing the caller's own cancellation.

`await task` after `task.cancel()` raises the child's CancelledError, which looks exactly
like the caller's own; suppressing it can swallow a cancellation meant for the caller.
`cancel_and_wait` waits with `asyncio.wait`, which never raises the child's outcome and
raises CancelledError only when the awaiting task is itself being cancelled, so that one
always propagates.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(*tasks: asyncio.Task[Any]) -> None:
    """Cancel each task and wait until all have ended.

    A child's cancellation or failure is absorbed (a failure is logged at debug level);
    the caller's own cancellation during the wait is raised. Safe to call from a `finally` that runs
    because the caller was cancelled: the wait then completes and the caller's
    cancellation goes on propagating from the `finally`."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.debug("task %s failed while stopping", task.get_name(), exc_info=task.exception())
