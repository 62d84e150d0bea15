"""A pause of an observed Run (seed 003: `pause_requested -> pausing -> paused`).

The pause command moved the turn's phase to `pause_requested` and signalled the turn's
execution. Observation then sends `prompt_pause` once and moves the phase to `pausing`.
The Run stops at its next checkpoint and ends with a `done` that says `paused`; the turn
is then suspended `paused` (no lease, no device, its status kept) and the open pause
commands are applied, all in one fenced transaction. A resume accepted meanwhile (only a
pause kill switch cleared with `resume` sends one to a turn still pausing,
control/commands.py) and newer than every open pause leaves the turn `resuming` instead,
to be re-claimed at once; the re-claim applies it. A cancel asked while the pause was
under way wins: the Run stopped at a checkpoint with nothing since, so the turn ends
cancelled there (`CANCEL_ASKED`; the observation settles it), the cancel applied and the
pause expired. A Run that ends otherwise settles as it would have, and the pause and
resume commands expire with it.

A drain pauses the same way, but leaves the turn `resuming` (no pause command asked for
it): a later start re-claims it and it continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.orchestration.collaborators import Collaborators
from allinone.core.orchestration.projector import RunProjection
from runtime.proto import run as wire_run
from storage import checkpoints, commands, turns
from storage.database import Tx

log = logging.getLogger(__name__)

# What `Pausing.apply` answers when a cancel was asked before the pause applied.
CANCEL_ASKED = "cancel_asked"


class Pausing:
    def __init__(
        self,
        parts: Collaborators,
        run: RunProjection,
        connection: Connection,
        requested: asyncio.Event,
        draining: Callable[[], bool],
    ) -> None:
        self._draining = draining
        self._parts = parts
        self._run = run
        self._connection = connection
        self.requested = requested
        self.sent = False

    def due(self) -> bool:
        return self.requested.is_set() and not self.sent

    async def send(self) -> None:
        """Move the phase to `pausing` and ask the Run to stop at its next checkpoint."""
        self.sent = True
        run = self._run

        async def job(tx: Tx) -> bool:
            if not await checkpoints.set_phase(tx, run.turn_id, "pausing", run.fencing_token):
                return False
            await self._parts.outcomes.recorder.emit_turn_phase(tx, run.turn_id)
            return True

        if not await self._parts.db.write(job):
            return
        with contextlib.suppress(SendFailed):  # a lost connection is handled as lost
            await self._connection.send("prompt_pause", run.turn_id, wire_run.PromptPause())

    def paused(self, done: wire_run.Done) -> bool:
        """Whether `done` ends the Run paused at a checkpoint with nothing since."""
        said = (done.metadata or {}).get(wire_run.PAUSED_METADATA_KEY) == "true"
        return self.sent and said and not self._run.inflight

    async def apply(self) -> str | None:
        """Suspend the turn `paused` (or `resuming`) and apply its open pause commands
        (fenced); the phase, `CANCEL_ASKED` when a cancel came first (nothing is changed
        then), or None when the Run no longer holds the turn."""
        run = self._run
        now = self._parts.clock.now()
        now_ms = self._parts.clock.now_ms()

        async def job(tx: Tx) -> str | None:
            row = await turns.get(tx, run.turn_id)
            if row is not None and row["cancel_requested_at"] is not None:
                return CANCEL_ASKED
            asked = await commands.open_pauses(tx, run.turn_id)
            # A resume sent while the pause was under way (a pause kill switch cleared
            # with `resume`), and no pause asked since: re-claimed at once, as after a
            # drain.
            resumed = asked[:1] == ["resume"]
            drained = self._draining() and "pause" not in asked
            phase = "resuming" if resumed or drained else "paused"
            token = run.fencing_token
            if not await checkpoints.suspend(tx, run.turn_id, phase, token, None, now_ms):
                return None
            await commands.settle(tx, run.turn_id, "pause", "applied", None, now)
            await self._parts.outcomes.recorder.emit_turn_phase(tx, run.turn_id)
            return phase

        phase = await self._parts.db.write_durably(job)
        if phase not in (None, CANCEL_ASKED):
            log.info("turn %s stopped at its checkpoint (%s)", run.turn_id, phase)
        return phase
