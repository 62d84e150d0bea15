"""Receiver self-reports: what an instance says about its own receiver.

A report is the client's word, not proof that a model or a background process is alive.
GET calls it fresh only when it was reported within RECEIVER_FRESH_SECONDS and enabled.
"""

from __future__ import annotations

from typing import Any

from allinone.core.comms.errors import NotFound
from allinone.core.comms.identities import Caller, writer_role
from allinone.core.comms.limits import RECEIVER_FRESH_SECONDS
from allinone.core.comms.models import ReceiverReport
from allinone.core.ids import Clock
from storage import comms_identities as rows
from storage.database import Database, Tx


def render_receiver(instance: dict[str, Any], now: int) -> dict[str, Any]:
    reported = instance["receiver_reported_at"]
    enabled = bool(instance["receiver_enabled"])
    return {
        "object": "communication.receiver",
        "instance_id": instance["id"],
        "mode": instance["receiver_mode"],
        "handler_state": instance["receiver_handler_state"],
        "enabled": enabled if reported is not None else None,
        "reported_at": reported,
        "fresh": enabled and reported is not None and now - reported <= RECEIVER_FRESH_SECONDS,
        "fresh_seconds": RECEIVER_FRESH_SECONDS,
        "self_reported": True,
        "server_time": now,
    }


class Receivers:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def report(self, caller: Caller, body: ReceiverReport) -> dict[str, Any]:
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            await writer_role(tx, caller, primary_only=False)
            await rows.report_receiver(
                tx, caller.instance_id, body.mode, body.handler_state, body.enabled, now
            )
            instance = await rows.instance(tx, caller.instance_id)
            assert instance is not None
            return render_receiver(instance, now)

        return await self._db.write(job)

    async def status(self, caller: Caller) -> dict[str, Any]:
        now = self._clock.now()
        instance = await self._db.read(lambda r: rows.instance(r, caller.instance_id))
        if instance is None:
            raise NotFound("The instance no longer exists.", code="INSTANCE_NOT_FOUND")
        return render_receiver(instance, now)
