"""Environment templates as stored: each change runs in one transaction here, with the
confidential inputs sealed before they reach storage and never returned.

A template is visible to its own project only; another project's template is reported
exactly like a missing one (`NotFound`).
"""

from __future__ import annotations

import logging
from typing import Any

from allinone.core import environment_templates as config
from allinone.core.errors import NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.sealing import Sealer
from allinone.core.shapes.template_models import TemplateBody
from storage import templates as rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)


def _context(project: str, template_id: str) -> str:
    return f"environment_templates:{project}:{template_id}"


class TemplateStore:
    def __init__(self, db: Database, sealer: Sealer, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._sealer = sealer
        self._ids = ids
        self._clock = clock

    async def get(self, project: str, template_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get(r, project, template_id))
        if row is None:
            raise NotFound()
        return row

    async def create(self, project: str, body: TemplateBody) -> str:
        """Store a new template; durable when this returns its id."""
        public, confidential = config.empty()
        name, public, confidential = config.merge(body, public, confidential, None)
        template_id = self._ids.new("envtpl")
        sealed = self._sealer.seal_json(confidential, _context(project, template_id))
        row = {
            "id": template_id,
            "project_id": project,
            "name": name,
            "config": public,
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> None:
            await rows.insert(tx, row, sealed)

        await self._db.write(job)
        log.info("created environment template %s in project %s", template_id, project)
        return template_id

    async def update(self, project: str, template_id: str, body: TemplateBody) -> None:
        """Merge `body` over the stored template; NotFound when it is gone."""
        current = await self.get(project, template_id)
        context = _context(project, template_id)
        sealed = bytes(current["sealed_confidential"])
        # A template imported from a bundle has no confidential inputs (nothing sealed).
        confidential = self._sealer.open_json(sealed, context) if sealed else config.empty()[1]
        name, public, confidential = config.merge(
            body, current["config"], confidential, current["name"]
        )
        sealed = self._sealer.seal_json(confidential, context)
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.update(
                tx, project, template_id, name=name, config=public, sealed=sealed, now=now
            )

        if not await self._db.write(job):
            raise NotFound()

    async def delete(self, project: str, template_id: str) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete(tx, project, template_id, now)

        if not await self._db.write(job):
            raise NotFound()
        log.info("deleted environment template %s in project %s", template_id, project)
