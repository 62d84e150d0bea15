"""Retention: contact data lives CONTACT_TTL_SECONDS (7 days) from the contact's creation,
closed or not, and is then deleted by a scheduler job.

Deleting a contact removes its messages, events in both roles' streams, receipts,
idempotency records, claims and retired lease ids in one transaction, and raises each
affected role's `gap_through_seq` so readers whose cursor lies before the deleted events
see `history_gap: true`. Deleted history cannot be recovered; replay from 0 covers only
what is still retained. Reads already hide expired contacts before the sweep runs.
"""

from __future__ import annotations

import logging

from allinone.core.comms.limits import RETENTION_BATCH
from allinone.core.ids import Clock
from storage import comms_contacts as rows
from storage import comms_identities as role_rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)


class Retention:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def sweep(self) -> int:
        """Delete every expired contact, in batches; return how many were deleted."""
        total = 0
        while True:
            now = self._clock.now()

            async def job(tx: Tx, now: int = now) -> int:
                expired = await rows.expired(tx, now, RETENTION_BATCH)
                for contact_id in expired:
                    for role_id, seq in await rows.delete_contact(tx, contact_id):
                        await role_rows.raise_gap(tx, role_id, seq)
                return len(expired)

            deleted = await self._db.write(job)
            total += deleted
            if deleted < RETENTION_BATCH:
                break
        if total:
            log.info("comms retention deleted %d expired contacts", total)
        return total
