"""Builds the communication platform's parts from the composition root's collaborators
and exposes what `allinone/app.py` wires in: the parts (whose routes
`allinone.core.api.comms.comms_routes` builds) and the retention sweep."""

from __future__ import annotations

from allinone.core.comms.claims import Claims
from allinone.core.comms.contacts import Contacts
from allinone.core.comms.conversations import Conversations
from allinone.core.comms.events import Events
from allinone.core.comms.identities import Identities
from allinone.core.comms.receipts import Receipts
from allinone.core.comms.receivers import Receivers
from allinone.core.comms.retention import Retention
from allinone.core.ids import Clock, Ids
from storage.database import Database

RETENTION_INTERVAL_MINUTES = 10


class Comms:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self.identities = Identities(db, ids, clock)
        self.contacts = Contacts(db, ids, clock)
        self.events = Events(db, clock)
        self.receipts = Receipts(db, clock)
        self.receivers = Receivers(db, clock)
        self.claims = Claims(db, ids, clock)
        self.retention = Retention(db, clock)
        self.conversations = Conversations(db, clock)

    async def sweep(self) -> None:
        """The scheduler's retention job."""
        await self.retention.sweep()
