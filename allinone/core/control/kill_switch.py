"""What a kill switch does to turns (`allinone.core.overlays`): a `cancel` one cancels
them as a client's cancel input would; a `pause` one pauses each by a pause command, and
resumes those it paused by a resume command when it is cleared with `resume`."""

from __future__ import annotations

import logging
from typing import Any

from allinone.core.control.commands import Commands, render
from allinone.core.control.commands import Request as CommandRequest
from allinone.core.errors import Refused
from allinone.core.overlays import ActOnTurns
from allinone.core.sessions.admission import Admission
from allinone.core.shapes.models import CancelInputEvent
from storage import overlays as overlay_rows

log = logging.getLogger(__name__)


def turn_canceller(admission: Admission) -> ActOnTurns:
    """Cancels the turns a `cancel` kill switch ends, as a client's cancel input would."""

    async def cancel(project_id: str, turns: list[tuple[str, str]], _: str) -> list[Any]:
        for session_id, turn_id in turns:
            try:
                await admission.admit_inputs(project_id, session_id, [CancelInputEvent()], None)
            except Refused as exc:  # e.g. the session was deleted meanwhile
                log.warning("kill switch could not cancel turn %s: %s", turn_id, exc.message)
        return []

    return cancel


def kill_switch_commands(commands: Commands, action: str) -> ActOnTurns:
    """Pauses the turns a `pause` kill switch stops (`action` "pause"), or resumes those
    it paused when it is cleared with `resume`: one command per turn, kept beside the ones
    clients send, with the kill switch as actor and reason. A pause's idempotency key
    names the overlay and the turn, which is how a clearing finds the turns it paused; a
    turn still on its way to that pause accepts the resume, applied once it paused."""
    reason = "kill switch" if action == "pause" else "kill switch cleared"

    async def act(project_id: str, turns: list[tuple[str, str]], overlay_id: str) -> list[Any]:
        sent: list[Any] = []
        for session_id, turn_id in turns:
            request = CommandRequest(action, turn_id, None, reason)
            key = overlay_rows.pause_key(overlay_id, turn_id) if action == "pause" else None
            try:
                row, _ = await commands.submit(
                    project_id, session_id, "kill_switch", request, key, after_pause=True
                )
                sent.append(render(row))
            except Refused as exc:  # e.g. the session was deleted meanwhile
                log.warning("kill switch could not %s turn %s: %s", action, turn_id, exc.message)
        return sent

    return act
