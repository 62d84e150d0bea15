"""Device credentials of Runtimes elsewhere, as stored: each change runs in one
transaction here, and what a change means for a live connection (closing it, asking its
Runtime to stop) happens only after the commit.

Only the credential's SHA-256 digest is stored. Revoking is permanent and idempotent;
the in-process Runtime's device can be neither revoked nor shut down.
"""

from __future__ import annotations

import logging
from typing import Any

from allinone.core.errors import Conflict, NotFound
from allinone.core.gateway.registry import Registry
from allinone.core.ids import Clock, Ids
from allinone.core.projects import digest_key
from storage import devices
from storage.database import Database, Tx

log = logging.getLogger(__name__)
CREDENTIAL_PREFIX = "cbd-"


class DeviceStore:
    def __init__(
        self, db: Database, ids: Ids, clock: Clock, registry: Registry, local_device: str
    ) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock
        self._registry = registry
        self._local_device = local_device

    async def get(self, device_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: devices.get_device(r, device_id))
        if row is None:
            raise NotFound()
        return row

    async def issue(self, name: str) -> tuple[str, str]:
        """A new device: (device_id, its credential, shown this once)."""
        device_id = self._ids.new("dev")
        credential = f"{CREDENTIAL_PREFIX}{self._ids.secret(32)}"
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await devices.insert_device(tx, device_id, name, digest_key(credential), now)

        await self._db.write(job)
        log.info("issued device %s", device_id)
        return device_id, credential

    def _refuse_local(self, device_id: str, action: str) -> None:
        if device_id == self._local_device:
            raise Conflict(f"The in-process Runtime's device cannot be {action}.")

    async def shut_down(self, device_id: str) -> None:
        await self.get(device_id)
        self._refuse_local(device_id, "shut down")
        if await self._registry.shut_down(device_id, "operator"):
            log.info("asked device %s to shut down", device_id)

    async def revoke(self, device_id: str) -> None:
        await self.get(device_id)
        self._refuse_local(device_id, "revoked")
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await devices.revoke_device(tx, device_id, now)

        if await self._db.write(job):
            log.info("revoked device %s", device_id)
        # After the commit: the credential no longer authenticates, so close what is open.
        self._registry.revoke(device_id)
