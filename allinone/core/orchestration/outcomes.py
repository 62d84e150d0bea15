"""How turns end: settlement from `done`, failures with their reasons, and the failure of
a turn a crash interrupted with something in flight (`interrupt`). Every ending is a
compare-and-set; a terminal turn never reopens and its outcome is never overwritten.

Internal reasons (`event_stream_incomplete`, `delivery_unknown`, `execution_interrupted`,
`execution_unavailable`) are stored as the turn's `error_code`; they mean the native
effect is unknown, not that the harness failed.

Steering messages never decide how a turn ends. When a turn ends (other than by
cancellation), a message Core never delivered, or that the Runtime refused, becomes the
initial input of the next queued turn; a message whose delivery nobody can confirm is
marked unknown on its own items and counted in the turn's `unknown_inputs`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from allinone.core import render
from allinone.core.ids import Clock, Ids
from allinone.core.log_context import turn_fields
from allinone.core.orchestration import manifest
from allinone.core.orchestration.projector import Projector, RunProjection
from allinone.core.orchestration.transitions import move
from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus
from runtime.proto import run as wire
from storage import commands, interactions, items, leases, sessions, turns
from storage.database import Database, Tx

MAX_NATIVE_SESSION_ID = 256  # a longer `agent_session_id` is not recorded

log = logging.getLogger(__name__)

# The phase of a running turn suspended for a re-claim (recovery.py).
RESUMING = "resuming"

# Steering states in which the message certainly never reached the harness.
_NEVER_DELIVERED = frozenset({"pending", "refused"})

TERMINAL_EVENT = {
    TurnStatus.COMPLETED: "agent.session.turn.completed",
    TurnStatus.FAILED: "agent.session.turn.failed",
    TurnStatus.CANCELLED: "agent.session.turn.cancelled",
}


class Outcomes:
    def __init__(
        self,
        db: Database,
        recorder: Recorder,
        projector: Projector,
        clock: Clock,
        ids: Ids | None = None,
    ) -> None:
        self._ids = ids or Ids(clock)
        self._db = db
        self.recorder = recorder
        self._projector = projector
        self._clock = clock

    @property
    def clock(self) -> Clock:
        return self._clock

    async def _end(
        self,
        tx: Tx,
        turn_id: str,
        session_id: str,
        status: TurnStatus,
        starts: tuple[TurnStatus, ...] | None,
        fencing_token: str | None,
        fields: dict[str, object],
    ) -> bool:
        # An ended turn is settled, whatever phase its Run left it in.
        fields = {"completed_at": self._clock.now(), "phase": "settled", **fields}
        steering = await interactions.unsettled_steering(tx, turn_id)
        unknown = [row for row in steering if row["state"] not in _NEVER_DELIVERED]
        if unknown:
            fields["unknown_inputs"] = len(unknown)
        moved = await move(tx, turn_id, status, starts, fencing_token=fencing_token, fields=fields)
        if not moved:
            return False
        for row in unknown:
            await self._mark_unknown(tx, row)
        await commands.settle_terminal(tx, turn_id, status.value, int(str(fields["completed_at"])))
        await self.recorder.emit_turn(tx, TERMINAL_EVENT[status], turn_id, terminal=True)
        await self.recorder.emit_session_activity(tx, session_id)
        undelivered = [row for row in steering if row["state"] in _NEVER_DELIVERED]
        if undelivered and status is not TurnStatus.CANCELLED:
            await self._next_turn(tx, turn_id, session_id, undelivered)
        return True

    async def _mark_unknown(self, tx: Tx, row: dict[str, Any]) -> None:
        """The message may or may not have reached the harness: say so on its items."""
        await interactions.set_input_state(tx, row["seq"], "unknown")
        for item_id in row["payload"].get("item_ids") or []:
            item = await items.get(tx, item_id)
            if item is None:
                continue
            payload = {**item["payload"], "x_corebox": {"delivery": "unknown"}}
            await items.update(tx, item_id, item["status"], payload)

    async def _next_turn(
        self, tx: Tx, ended_turn_id: str, session_id: str, inputs: list[dict[str, Any]]
    ) -> None:
        """Start the next turn with the messages the ended one never received."""
        ended = await turns.get(tx, ended_turn_id)
        assert ended is not None
        turn_id = self._ids.new("turn")
        await turns.insert(tx, turn_id, session_id, ended["agent_id"], self._clock.now())
        await interactions.move_inputs(tx, [row["seq"] for row in inputs], turn_id)
        await self.recorder.emit_turn(tx, "agent.session.turn.created", turn_id)
        await self.recorder.emit_session(tx, session_id, "agent.session.in_progress")

    async def settle(
        self,
        tx: Tx,
        run: RunProjection,
        done: wire.Done,
        *,
        cancelled: bool,
        unconfirmed: bool = False,
        captured: bool = True,
    ) -> None:
        """Settle a turn from its `done` frame and, after a cancellation, its receipt.

        Precedence: a harness error fails the turn; a confirmed cancellation cancels it;
        a cancellation without a receipt is `cancel_unconfirmed`; otherwise it completed.
        Steering messages the harness never confirmed consuming do not change the outcome
        (see the module docstring).
        """
        await self._projector.check_fence(tx, run)
        native = (done.metadata or {}).get("agent_session_id", "")
        if 0 < len(native) <= MAX_NATIVE_SESSION_ID:
            await sessions.set_native_session(tx, run.session_id, native)
        await manifest.settle(tx, run.session_id, run.turn_id, done.metadata)
        await self._projector.close_unfinished(tx, run)
        await interactions.withdraw_open(tx, run.turn_id)
        status, fields = ending(run, cancelled, unconfirmed, captured)
        if done.usage is not None and done.usage.tokens is not None:
            # Written by the compare-and-set that ends the turn (and counted into the
            # session's total by it), not by a statement of its own.
            fields["usage"] = render.token_usage(done.usage.tokens)
        if done.workspace_snapshot:
            # The managed workspace as this turn left it: what a fork at this turn copies.
            fields["workspace_snapshot"] = done.workspace_snapshot
        await self._end(
            tx,
            run.turn_id,
            run.session_id,
            status,
            (TurnStatus.IN_PROGRESS, TurnStatus.WAITING),
            run.fencing_token,
            fields,
        )

    async def fail_queued(self, turn_id: str, code: str, message: str) -> None:
        """Fail a turn before its Run starts, for a check before the claim (its budget,
        an overlay, its Environment, the preparation): a queued turn, or one suspended
        for a re-claim (phase `resuming`: fenced on the token it was suspended with, so
        a turn another process re-claimed meanwhile is left alone)."""

        async def job(tx: Tx) -> None:
            row = await turns.get(tx, turn_id)
            if row is None:
                return
            fields: dict[str, object] = {"error_code": code, "error_message": message}
            if row["status"] == TurnStatus.QUEUED:
                await self.recorder.announce_queued_input(tx, turn_id)
            elif row.get("phase") == RESUMING:
                await self._end_suspended(tx, row, fields)
                return
            await self._end(
                tx,
                turn_id,
                row["session_id"],
                TurnStatus.FAILED,
                (TurnStatus.QUEUED,),
                None,
                fields,
            )

        await self._db.write_durably(job)  # settles as soon as storage takes writes

    async def _end_suspended(self, tx: Tx, row: dict[str, Any], fields: dict[str, object]) -> None:
        turn_id = str(row["id"])
        running = (TurnStatus.IN_PROGRESS, TurnStatus.WAITING)
        token = row.get("fencing_token")
        if not await self._end(
            tx, turn_id, str(row["session_id"]), TurnStatus.FAILED, running, token, fields
        ):
            return
        await leases.interrupt_items(tx, turn_id)
        await interactions.withdraw_open(tx, turn_id)

    async def fail_running(self, turn_id: str, run: RunProjection, code: str, message: str) -> None:
        async def job(tx: Tx) -> None:
            await self._projector.close_unfinished(tx, run)
            await interactions.withdraw_open(tx, run.turn_id)
            await self._end(
                tx,
                turn_id,
                run.session_id,
                TurnStatus.FAILED,
                (TurnStatus.IN_PROGRESS, TurnStatus.WAITING),
                run.fencing_token,
                {"error_code": code, "error_message": message},
            )

        await self._db.write_durably(job)  # settles as soon as storage takes writes

    async def expire_leases(self, abandon: Callable[[str], None]) -> int:
        """Fail running turns whose lease lapsed: their owner stopped renewing it (a live
        owner renews while it observes), so their effects are unknown and nothing is
        replayed. `abandon(turn_id)` is called after each commit so an owner in this
        process stops observing the turn."""
        now = self._clock.now()
        rows = await self._db.read(partial(leases.expired, now=now))
        expired = 0
        for row in rows:

            async def job(
                tx: Tx, turn_id: str = row["id"], session_id: str = row["session_id"]
            ) -> bool:
                await interactions.withdraw_open(tx, turn_id)
                return await self._end(
                    tx,
                    turn_id,
                    session_id,
                    TurnStatus.FAILED,
                    (TurnStatus.IN_PROGRESS, TurnStatus.WAITING),
                    None,
                    {
                        "error_code": "lease_expired",
                        "error_message": "The turn's owner stopped renewing its lease; "
                        "its effects are unknown.",
                    },
                )

            if await self._db.write(job):
                with turn_fields(row["session_id"], row["id"]):
                    log.warning("turn %s: lease expired; failed as lease_expired", row["id"])
                abandon(row["id"])
                expired += 1
        return expired

    async def interrupt(self, tx: Tx, row: dict[str, Any], operation: str | None) -> bool:
        """Fail a running turn whose Run was lost with something in flight (Core stopped):
        its unfinished items end incomplete, its open requests are withdrawn, and the error
        names the operation whose outcome is unknown. Nothing is replayed."""
        unknown = _unknown(operation)
        message = f"The execution stopped while this turn was running; {unknown}."
        return await self._stop(
            tx, row, {"error_code": "execution_interrupted", "error_message": message}
        )

    async def unrestorable(self, tx: Tx, row: dict[str, Any], problem: str) -> bool:
        """Fail a suspended turn that cannot continue from its checkpoint (restore
        validation said why: `recovery.restore_problem`), as `interrupt` does."""
        message = f"The turn could not continue from its checkpoint: {problem}."
        return await self._stop(
            tx, row, {"error_code": "execution_interrupted", "error_message": message}
        )

    async def observation_lost(
        self, tx: Tx, row: dict[str, Any], run: RunProjection, operation: str | None, reason: str
    ) -> bool:
        """Fail a running turn whose Runtime went away (its connection closed) with
        something in flight, as `interrupt` does, keeping what this process observed of
        `run`: `event_stream_incomplete`, since the Run may still have gone on."""
        await self._projector.close_unfinished(tx, run)
        message = f"Observation of the execution stopped ({reason}); {_unknown(operation)}."
        return await self._stop(
            tx, row, {"error_code": "event_stream_incomplete", "error_message": message}
        )

    async def deadline_passed(self, tx: Tx, row: dict[str, Any]) -> bool:
        """Fail a suspended turn (no Run holds it) whose deadline passed before it was
        re-claimed: `turn_deadline_exceeded`, as a Run cut at its deadline ends, and
        nothing is started again. Fenced on the token it was suspended with, so a
        re-claim that won meanwhile keeps it; whether it moved."""
        return await self._stop(tx, row, DEADLINE_FIELDS, row.get("fencing_token"))

    async def _stop(
        self,
        tx: Tx,
        row: dict[str, Any],
        fields: dict[str, object],
        fencing_token: str | None = None,
    ) -> bool:
        turn_id = str(row["id"])
        await leases.interrupt_items(tx, turn_id)
        await interactions.withdraw_open(tx, turn_id)
        return await self._end(
            tx,
            turn_id,
            str(row["session_id"]),
            TurnStatus.FAILED,
            (TurnStatus.IN_PROGRESS, TurnStatus.WAITING),
            fencing_token,
            fields,
        )


def _unknown(operation: str | None) -> str:
    return f"the outcome of {operation} is unknown" if operation else "its effects are unknown"


DEADLINE_CODE = "turn_deadline_exceeded"
BUDGET_CODE = "session_budget_exceeded"
# How a turn that ran past its session's per-turn deadline ends (failed).
DEADLINE_FIELDS: dict[str, object] = {
    "error_code": DEADLINE_CODE,
    "error_message": "The turn ran past the session's per-turn deadline.",
    "engine_error_code": "request_timeout",
}


def ending(
    run: RunProjection, cancelled: bool, unconfirmed: bool, captured: bool
) -> tuple[TurnStatus, dict[str, object]]:
    """How a turn that sent `done` ends, and the fields that say why (see `settle`)."""
    fields: dict[str, object] = {"phase": "settled"}
    if run.error is not None:
        fields.update(
            {
                "error_code": "engine_failed",
                "error_message": run.error.error[:1000] or "The harness failed.",
                "engine_error_code": run.engine_code or None,
                "engine_http_status": run.engine_status or None,
            }
        )
        return TurnStatus.FAILED, fields
    if run.deadline_passed and (cancelled or unconfirmed):
        fields.update(DEADLINE_FIELDS)
        return TurnStatus.FAILED, fields
    if run.over_budget and (cancelled or unconfirmed):
        fields.update(
            {
                "error_code": BUDGET_CODE,
                "error_message": "The turn went past the session's spend_control limit.",
            }
        )
        return TurnStatus.FAILED, fields
    if cancelled:
        return TurnStatus.CANCELLED, fields
    if unconfirmed:
        fields["error_code"] = "cancel_unconfirmed"
        fields["error_message"] = (
            "The cancellation was not confirmed; the turn's effects are unknown."
        )
        return TurnStatus.FAILED, fields
    if not captured:
        fields["error_code"] = "artifact_capture_failed"
        fields["error_message"] = "The turn's outputs could not be captured."
        return TurnStatus.FAILED, fields
    return TurnStatus.COMPLETED, fields
