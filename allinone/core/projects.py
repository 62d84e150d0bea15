"""Projects and their API keys as stored: each change runs in one transaction here.

Project keys are returned once, when issued, and stored only as SHA-256 digests.
Revoking a key leaves the project's other keys working; archiving a project revokes all
of them. No key is ever logged.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from allinone.core.errors import Conflict, InvalidRequest, NotFound
from allinone.core.ids import Clock, Ids
from storage import tenancy
from storage.database import Database, Tx

log = logging.getLogger(__name__)
KEY_PREFIX = "cbx-"


def digest_key(key: str) -> str:
    """How a bearer key is stored and compared: its SHA-256 digest."""
    return hashlib.sha256(key.encode()).hexdigest()


class ProjectStore:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def get(self, project_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: tenancy.get_project(r, project_id))
        if row is None:
            raise NotFound()
        return dict(row)

    async def live(self, project_id: str, refusal: str) -> None:
        """Raise NotFound, or Conflict(`refusal`) when the project is archived."""
        if (await self.get(project_id))["archived_at"] is not None:
            raise Conflict(refusal)

    async def create(self, name: str) -> str:
        name = name.strip()
        if not name:
            raise InvalidRequest("name must not be blank.", "name")
        project_id = self._ids.new("proj")
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await tenancy.insert_project(tx, project_id, name, now)

        await self._db.write(job)
        log.info("created project %s", project_id)
        return project_id

    async def archive(self, project_id: str) -> None:
        await self.get(project_id)
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await tenancy.archive_project(tx, project_id, now)

        await self._db.write(job)
        log.info("archived project %s and revoked its keys", project_id)

    async def issue_key(self, project_id: str, name: str | None) -> tuple[str, str]:
        """A new key of a live project: (key_id, the key itself, shown this once)."""
        await self.live(project_id, "The project is archived; it cannot have new keys.")
        key = f"{KEY_PREFIX}{self._ids.secret(24)}"
        key_id = self._ids.new("key")
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await tenancy.insert_key(
                tx, key_id, project_id, digest_key(key), key[:8], now, name=name
            )

        await self._db.write(job)
        log.info("issued key %s for project %s", key_id, project_id)
        return key_id, key

    async def key(self, project_id: str, key_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: tenancy.get_key(r, project_id, key_id))
        if row is None:
            raise NotFound()
        return row

    async def revoke_key(self, project_id: str, key_id: str) -> None:
        await self.key(project_id, key_id)
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await tenancy.revoke_key(tx, project_id, key_id, now)

        await self._db.write(job)
        log.info("revoked key %s of project %s", key_id, project_id)
