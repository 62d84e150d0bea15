"""Core's side of suspension fencing: `environment_quiesce` and `environment_resume`.

A paused turn's Environment is quiesced on the Runtime that ran it, and resumed before
the turn continues there. Both are best effort: a refusal or a missing reply is logged
and the turn's own state is unchanged (a Runtime that restarted has forgotten every
suspension; resuming one it never had is a no-op).
"""

from __future__ import annotations

import asyncio
import logging

from allinone.core.gateway.connection import Connection, SendFailed
from runtime.proto.suspension import (
    EnvironmentQuiesce,
    EnvironmentQuiesced,
    EnvironmentResume,
    EnvironmentResumed,
)

log = logging.getLogger(__name__)


def suspend_id(turn_id: str) -> str:
    """The suspension id of a turn's pause (at most 128 bytes)."""
    return f"pause-{turn_id}"[:128]


async def quiesce(
    connection: Connection, environment_id: str, suspend: str, timeout: float
) -> bool:
    return await _ask(
        connection,
        "environment_quiesce",
        EnvironmentQuiesce(environment_id=environment_id, suspend_id=suspend),
        suspend,
        timeout,
    )


async def resume(connection: Connection, environment_id: str, suspend: str, timeout: float) -> bool:
    return await _ask(
        connection,
        "environment_resume",
        EnvironmentResume(environment_id=environment_id, suspend_id=suspend),
        suspend,
        timeout,
    )


async def _ask(
    connection: Connection,
    type_: str,
    payload: EnvironmentQuiesce | EnvironmentResume,
    suspend: str,
    timeout: float,
) -> bool:
    """Send the request and wait for its reply; whether the Runtime accepted it."""
    replies = connection.expect_results(suspend)
    try:
        await connection.send(type_, suspend, payload)
        frame = await asyncio.wait_for(replies.get(), timeout)
    except (SendFailed, TimeoutError):
        log.warning("%s %s: no reply", type_, suspend)
        return False
    finally:
        connection.forget_results(suspend)
    reply = frame.payload
    if not isinstance(reply, (EnvironmentQuiesced, EnvironmentResumed)) or not reply.accepted:
        code = getattr(reply, "error_code", "")
        log.warning("%s %s refused: %s", type_, suspend, code)
        return False
    log.info("%s %s accepted", type_, suspend)
    return True
