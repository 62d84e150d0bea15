"""Control commands as resources (seed 003): pause, resume and cancel of a session's
turn, each with an id, the acting key, its target, an expected state version and an
idempotency key.

`Commands.submit` checks and writes a command in one transaction, together with the
change it makes at once, and only then signals the orchestrator. A command is
`rejected` at once with its reason (`no_turn`, `terminal`, `state_version_mismatch`,
`not_paused`, `already_paused`); `applied` at once when nothing runs the turn (a queued
or suspended turn); otherwise `accepted` and applied where the change happens: a pause
at the Run's next checkpoint (orchestration/pausing.py), a resume when a worker
re-claimed the turn (orchestration/turn.py), a cancel when the turn ended cancelled. A
resume of a turn still on its way to a pause is refused `not_paused`, except the one a
pause kill switch sends the turns it paused when it is cleared with `resume`: accepted,
the pause then leaves the turn to be re-claimed (orchestration/pausing.py). An
accepted command whose turn ended before it applied is `expired`, its reason naming how
the turn ended (`turn_completed`, `turn_failed`, `turn_cancelled`).

Two resumes with the same expected state version: the first compare-and-set moves the
version, the second is rejected `state_version_mismatch`; exactly one is applied.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allinone.core.control.suspended import SUSPENDED_PHASES, cancel_suspended
from allinone.core.errors import IdempotencyConflict, NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.states import ACTIVE_TURN, TurnStatus
from storage import checkpoints, commands, interactions, sessions, turns
from storage.database import Database, Tx

RUNNING = (TurnStatus.IN_PROGRESS.value, TurnStatus.WAITING.value)


@dataclass(frozen=True)
class Signals:
    """How an accepted command reaches the orchestrator (after its commit)."""

    wake: Callable[[], None]
    pause: Callable[[str], None]
    cancel: Callable[[str], None]


@dataclass(frozen=True)
class Request:
    action: str
    turn_id: str | None
    expected_state_version: int | None
    reason: str | None

    def digest(self) -> str:
        body = json.dumps(self.__dict__, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()


class Commands:
    def __init__(
        self, db: Database, recorder: Recorder, ids: Ids, clock: Clock, signals: Signals
    ) -> None:
        self._db = db
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._signals = signals

    async def submit(
        self,
        project_id: str,
        session_id: str,
        actor: str,
        request: Request,
        idempotency_key: str | None,
        after_pause: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Write the command; (its row, whether it is an idempotent replay).
        `after_pause`: a resume of a turn still on its way to a pause is accepted and
        applied once the pause landed, instead of refused `not_paused`."""

        async def job(tx: Tx) -> tuple[dict[str, Any], bool]:
            if await sessions.get(tx, project_id, session_id) is None:
                raise NotFound("No such session.", param="session_id")
            if idempotency_key:
                known = await commands.by_key(tx, session_id, actor, idempotency_key)
                if known is not None:
                    if known["request_hash"] != request.digest():
                        raise IdempotencyConflict(
                            "The Idempotency-Key was used with a different command."
                        )
                    return known, True
            row = await self._write(tx, session_id, actor, request, idempotency_key, after_pause)
            return row, False

        row, replay = await self._db.write(job)
        if not replay and row["status"] == commands.OPEN:
            self._signal(row)
        return row, replay

    def _signal(self, row: dict[str, Any]) -> None:
        if row["action"] == "pause":
            self._signals.pause(row["turn_id"])
        elif row["action"] == "cancel":
            self._signals.cancel(row["turn_id"])
        self._signals.wake()

    async def get(self, project_id: str, command_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: commands.get(r, command_id))
        if row is None or row["project_id"] != project_id:
            raise NotFound("No such command.", param="command_id")
        return row

    async def _write(
        self,
        tx: Tx,
        session_id: str,
        actor: str,
        request: Request,
        key: str | None,
        after_pause: bool,
    ) -> dict[str, Any]:
        turn = await self._target(tx, session_id, request.turn_id)
        status, reason = await self._apply(tx, turn, request, after_pause)
        now = self._clock.now()
        session = await sessions.get_any(tx, session_id)
        assert session is not None
        row = {
            "id": self._ids.new("cmd"),
            "project_id": session["project_id"],
            "session_id": session_id,
            "turn_id": None if turn is None else turn["id"],
            "action": request.action,
            "status": status,
            "reason": reason or (request.reason if status != "rejected" else None),
            "expected_state_version": request.expected_state_version,
            "actor": actor,
            "idempotency_key": key,
            "request_hash": request.digest(),
            "created_at": now,
            "updated_at": now,
        }
        await commands.insert(tx, row)
        return row

    async def _target(self, tx: Tx, session_id: str, turn_id: str | None) -> dict[str, Any] | None:
        if turn_id is None:
            return await turns.active(tx, session_id)
        row = await turns.get(tx, turn_id)
        if row is None or row["session_id"] != session_id:
            raise NotFound("No such turn in this session.", param="turn_id")
        return row

    async def _apply(
        self, tx: Tx, turn: dict[str, Any] | None, request: Request, after_pause: bool
    ) -> tuple[str, str | None]:
        """Check the command against the turn and make the change it makes at once:
        (status, reason)."""
        if turn is None:
            return "rejected", "no_turn"
        if turn["status"] not in {s.value for s in ACTIVE_TURN}:
            return "rejected", "terminal"
        expected = request.expected_state_version
        if expected is not None and expected != turn["state_version"]:
            return "rejected", "state_version_mismatch"
        version = turn["state_version"]
        if request.action == "pause":
            return await self._pause(tx, turn, version)
        if request.action == "resume":
            return await self._resume(tx, turn, version, after_pause)
        return await self._cancel(tx, turn, version)

    async def _moved(
        self,
        tx: Tx,
        turn: dict[str, Any],
        phase: str | None,
        version: int,
        statuses: tuple[str, ...],
    ) -> bool:
        return await checkpoints.set_phase_at(tx, turn["id"], phase, version, statuses)

    async def _pause(self, tx: Tx, turn: dict[str, Any], version: int) -> tuple[str, str | None]:
        phase = turn.get("phase")
        if phase == "paused":
            return "rejected", "already_paused"
        if phase in ("pause_requested", "pausing"):
            return "accepted", None  # applied with the pause already under way
        if turn["status"] == TurnStatus.QUEUED:
            ok = await self._moved(tx, turn, "paused", version, (TurnStatus.QUEUED.value,))
            return ("applied", None) if ok else ("rejected", "state_version_mismatch")
        if phase == "resuming":
            now_ms = self._clock.now_ms()
            ok = await checkpoints.suspend(tx, turn["id"], "paused", None, version, now_ms)
            return await self._announced(tx, turn, ok, "applied")
        ok = await self._moved(tx, turn, "pause_requested", version, RUNNING)
        return await self._announced(tx, turn, ok, "accepted")

    async def _resume(
        self, tx: Tx, turn: dict[str, Any], version: int, after_pause: bool
    ) -> tuple[str, str | None]:
        phase = turn.get("phase")
        if after_pause and phase in ("pause_requested", "pausing"):
            return "accepted", None  # the pause leaves the turn resuming (pausing.py)
        if phase != "paused":
            return "rejected", "not_paused"
        if turn["status"] == TurnStatus.QUEUED:
            ok = await self._moved(tx, turn, None, version, (TurnStatus.QUEUED.value,))
            return ("applied", None) if ok else ("rejected", "state_version_mismatch")
        ok = await self._moved(tx, turn, "resuming", version, RUNNING)
        return await self._announced(tx, turn, ok, "accepted")

    async def _announced(
        self, tx: Tx, turn: dict[str, Any], moved: bool, status: str
    ) -> tuple[str, str | None]:
        """The outcome of a compare-and-set on a running turn's phase; when it moved, the
        new phase is announced on the session's stream."""
        if not moved:
            return "rejected", "state_version_mismatch"
        await self._recorder.emit_turn_phase(tx, turn["id"])
        return status, None

    async def _cancel(self, tx: Tx, turn: dict[str, Any], version: int) -> tuple[str, str | None]:
        now = self._clock.now()
        if turn["status"] == TurnStatus.QUEUED:
            moved = await turns.transition(
                tx,
                turn["id"],
                (TurnStatus.QUEUED.value,),
                TurnStatus.CANCELLED,
                fields={"cancel_requested_at": now, "completed_at": now, "phase": "settled"},
            )
            if not moved:
                return "rejected", "state_version_mismatch"
            await self._recorder.emit_turn(
                tx, "agent.session.turn.cancelled", turn["id"], terminal=True
            )
            await self._recorder.emit_session_activity(tx, turn["session_id"])
            return "applied", None
        if turn.get("phase") in SUSPENDED_PHASES:
            ok = await cancel_suspended(tx, self._recorder, turn, now)
            return ("applied", None) if ok else ("rejected", "state_version_mismatch")
        await turns.request_cancel(tx, turn["id"], now)
        if turn["status"] == TurnStatus.WAITING:
            # Pending actions drop at once; the cancellation receipt settles the turn.
            await interactions.withdraw_open(tx, turn["id"])
            if await turns.transition(
                tx, turn["id"], (TurnStatus.WAITING.value,), TurnStatus.IN_PROGRESS
            ):
                await self._recorder.emit_session_activity(tx, turn["session_id"])
        return "accepted", None

    async def page(
        self, project_id: str, session_id: str, after: str | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        async def read(r: Any) -> tuple[list[dict[str, Any]], bool]:
            if await sessions.get(r, project_id, session_id) is None:
                raise NotFound("No such session.", param="session_id")
            return await commands.page(r, session_id, after, limit)

        return await self._db.read(read)


def render(row: dict[str, Any]) -> dict[str, Any]:
    """The API shape of a command (`x_corebox.command`)."""
    return {
        "id": row["id"],
        "object": "x_corebox.command",
        "action": row["action"],
        "session_id": row["session_id"],
        "turn_id": row["turn_id"],
        "status": row["status"],
        "reason": row["reason"],
        "expected_state_version": row["expected_state_version"],
        "actor": row["actor"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
