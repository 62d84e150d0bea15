"""Running one subagent inside a Run and reporting it to Core.

`run_subagent` opens a subagent, plays one turn of it (the user message is its task;
`answer` produces its reply) and closes it, emitting the observation frames in the
order seed 000 requires: `subagent_identity`, `subagent_lifecycle` active,
`subagent_turn` in_progress, the turn's `subagent_item`s, the terminal `subagent_turn`,
then `subagent_lifecycle` closed. A failing `answer` ends the subagent's turn `failed`
(`cancelled` when the Run is being cancelled; the subagent still closes) and the
failure propagates to the caller.

Harnesses call it only when Core enabled subagents for the execution; `allowed` says
so.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from runtime.harness.base import RunContext
from runtime.proto import subagents as wire
from runtime.proto.execution import ExecutionConfiguration

Answer = Callable[[str], Awaitable[str]]


def allowed(configuration: ExecutionConfiguration) -> bool:
    """Subagents run only on Core's explicit opt-in: it asks to observe their
    identities and has not disabled them."""
    return configuration.observe_subagent_identities and not configuration.disable_subagents


def _now_ms() -> int:
    return int(time.time() * 1000)


def _native(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


async def run_subagent(
    context: RunContext,
    *,
    parent_turn_id: str,
    source_item_id: str,
    name: str | None,
    task: str,
    answer: Answer,
) -> str:
    """Open a subagent with `task`, play its one turn, close it; return its reply.
    `name` is the harness's choice, or None to let Core name it (Core keeps names
    unique within the session)."""
    native_id, turn_id = _native("sub"), _native("subturn")
    opened = _now_ms()
    await context.emit(
        "subagent_identity",
        wire.SubagentIdentity(
            native_id=native_id,
            parent_turn_id=parent_turn_id,
            source_item_id=source_item_id,
            native_created_at=opened,
            name=name,
            instructions=task,
        ),
    )
    await context.emit("subagent_lifecycle", wire.SubagentLifecycle(native_id, "active", opened))
    turn = wire.SubagentTurn(native_id, turn_id, "in_progress", opened, started_at_ms=opened)
    await context.emit("subagent_turn", turn)
    await _item(context, native_id, turn_id, 0, wire.SubagentMessage("user", task))
    status: Literal["completed", "failed", "cancelled"] = "failed"
    try:
        reply = await answer(task)
        await _item(context, native_id, turn_id, 1, wire.SubagentMessage("assistant", reply))
        status = "completed"
        return reply
    except asyncio.CancelledError:
        status = "cancelled"
        raise
    finally:
        ended = _now_ms()
        await context.emit(
            "subagent_turn",
            wire.SubagentTurn(
                native_id, turn_id, status, opened, started_at_ms=opened, completed_at_ms=ended
            ),
        )
        await context.emit("subagent_lifecycle", wire.SubagentLifecycle(native_id, "closed", ended))


async def _item(
    context: RunContext,
    native_id: str,
    turn_id: str,
    position: int,
    message: wire.SubagentMessage,
) -> None:
    await context.emit(
        "subagent_item",
        wire.SubagentItem(native_id, turn_id, _native("subitem"), position, "message", message),
    )
