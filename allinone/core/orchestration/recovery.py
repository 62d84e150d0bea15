"""What happens to a running turn whose Run is gone: after a crash of Core, or when the
Runtime that ran it disconnected while Core stayed up (DESIGN.md section 4, step 7).

A turn whose latest checkpoint can be restored (`storage.checkpoints.restorable`: one
was committed under the current claim, nothing started since, no input delivery is
unconfirmed, the pinned configuration is unchanged) is suspended with phase `resuming`:
it holds no lease and no device, and the orchestrator re-claims it with a new worker
epoch and fencing token and continues it from the checkpoint on a new Run. Every other
running turn fails `execution_interrupted`, naming the operation whose outcome is
unknown. A paused turn stays paused. Nothing is ever replayed.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from allinone.core.orchestration.outcomes import RESUMING, Outcomes
from allinone.core.orchestration.projector import RunProjection
from allinone.core.recorder import Recorder
from storage import checkpoints, cluster, commands, turns
from storage.database import Database, Tx

log = logging.getLogger(__name__)

PAUSED = "paused"
# What `Recovery.run_lost` did with the turn of a lost Run.
CONTINUES = "continues"
INTERRUPTED = "interrupted"


async def unknown_operation(tx: Tx, row: dict[str, Any]) -> str | None:
    """Why the turn cannot continue from its checkpoint (the operation in flight, or the
    checkpoint that is missing or invalid); None when it can."""
    if not checkpoints.restorable(row):
        if row.get("inflight_operation"):
            return str(row["inflight_operation"])
        return None if row.get("checkpoint_cursor") else "the Run's work (no checkpoint)"
    return await checkpoints.deliveries_in_flight(tx, str(row["id"]))


async def suspend(
    tx: Tx, row: dict[str, Any], token: str | None, recorder: Recorder, now_ms: int
) -> bool:
    """Suspend a turn that can continue from its checkpoint: `resuming`, or `paused`
    when a pause someone asked for was under way (the newest of its open pause and
    resume commands is a pause; they are then applied, and the turn's deadline stops at
    `now_ms`: the time Core was down counts as running). A drain's pause, which no
    command asked for, leaves it `resuming`, as a drain that finished would have. The
    new phase is announced on the session's stream."""
    pausing = row.get("phase") in ("pause_requested", "pausing")
    asked = await commands.open_pauses(tx, str(row["id"])) if pausing else []
    phase = PAUSED if asked[:1] == ["pause"] else RESUMING
    version = row["state_version"]
    if not await checkpoints.suspend(tx, row["id"], phase, token, version, now_ms):
        return False
    if "pause" in asked:
        now = int(row.get("checkpoint_at") or 0)
        await commands.settle(tx, row["id"], "pause", "applied", None, now)
    await recorder.emit_turn_phase(tx, str(row["id"]))
    return True


def restore_problem(row: dict[str, Any], config_digest: str | None) -> str | None:
    """Restore validation before a re-claim, given the digest of the configuration the
    new Run is to start with (the turn's pinned one, `revisions.pinned`): why the turn
    cannot continue from its checkpoint on a new Run, or None when it can."""
    if row.get("phase") != RESUMING:
        return "it is not waiting to be re-claimed"
    if not checkpoints.restorable(row):
        return "the checkpoint is missing or was superseded"
    if row.get("checkpoint_config_digest") != config_digest:
        return "the configuration it was taken with is not stored with the session"
    return None


class Recovery:
    def __init__(self, db: Database, outcomes: Outcomes) -> None:
        self._db = db
        self._outcomes = outcomes

    async def after_restart(self, since: int | None = None) -> tuple[int, int]:
        """At start-up, before any claim: suspend what can continue, fail the rest.
        With `since` (processes share the database), only the running turns no live
        process owns (none beat at or after `since`); without it, every running turn.
        Returns (suspended, failed)."""
        if since is None:
            running = await self._db.read(turns.running)
        else:
            running = await self._db.read(partial(cluster.orphaned_turns, since=since))
        return await self._recover_all(running, "after a restart")

    async def peer_lapsed(self, process_id: str) -> tuple[int, int]:
        """The Core process `process_id` is gone (this process won the right to recover
        it): its running turns follow the crash rules, as after a restart."""
        running = await self._db.read(partial(cluster.turns_of, process_id=process_id))
        return await self._recover_all(running, f"core process {process_id} gone")

    async def _recover_all(self, running: list[dict[str, Any]], why: str) -> tuple[int, int]:
        suspended = failed = paused = 0
        for row in running:
            if row.get("phase") == PAUSED:
                paused += 1
                continue
            if await self._db.write(partial(self._recover, row=row, token=None)):
                suspended += 1
            else:
                failed += 1
        if suspended or failed:
            log.warning(
                "%s: %d turn(s) continue from their checkpoint, %d failed",
                why,
                suspended,
                failed,
            )
        if paused:
            log.info("%s: %d paused turn(s) stay paused until resumed", why, paused)
        return suspended, failed

    async def run_lost(self, run: RunProjection, reason: str) -> str | None:
        """The Run's observation was lost (its Runtime's connection closed): suspend the
        turn for a re-claim when it can continue from its checkpoint (`CONTINUES`), else
        fail it `event_stream_incomplete` naming the operation whose outcome is unknown
        (`INTERRUPTED`); None when the Run no longer holds the turn. Fenced on the Run's
        token."""

        async def job(tx: Tx) -> str | None:
            row = await turns.get(tx, run.turn_id)
            if row is None or row.get("fencing_token") != run.fencing_token:
                return None
            operation = await unknown_operation(tx, row)
            now_ms = self._outcomes.clock.now_ms()
            if operation is None and await suspend(
                tx, row, run.fencing_token, self._outcomes.recorder, now_ms
            ):
                return CONTINUES
            if await self._outcomes.observation_lost(tx, row, run, operation, reason):
                return INTERRUPTED
            return None

        return await self._db.write_durably(job)

    async def _recover(self, tx: Tx, row: dict[str, Any], token: str | None) -> bool:
        fresh = await turns.get(tx, str(row["id"]))
        if fresh is None or fresh["status"] not in ("in_progress", "waiting"):
            return True
        if fresh.get("phase") in (PAUSED, RESUMING):
            return True  # already suspended: it waits for a resume or a re-claim
        reason = await unknown_operation(tx, fresh)
        now_ms = self._outcomes.clock.now_ms()
        if reason is None and await suspend(tx, fresh, token, self._outcomes.recorder, now_ms):
            return True
        await self._outcomes.interrupt(tx, fresh, reason)
        return False
