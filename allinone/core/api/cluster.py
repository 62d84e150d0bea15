"""`GET /core/v1/cluster` (Core key): the Core processes that share this database.

Answers `{"object": "x_corebox.cluster", "shared", "process_id", "processes"}`: whether
other processes may share the database (PostgreSQL), the id of the process that
answered, and the latest processes, newest start first, each with `id`, `host`, `pid`,
`started_at`, `heartbeat_at`, `stopped_at`, `stop_reason` (`stopped` or `lapsed`),
`live` and the `devices` whose Runtime connection it holds (for the answering process,
as they are now; for the others, as they last recorded).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.common import json
from allinone.core.cluster.membership import Membership
from storage import cluster
from storage.database import Database

FIELDS = ("id", "host", "pid", "started_at", "heartbeat_at", "stopped_at", "stop_reason")


class ClusterApi:
    def __init__(self, db: Database, membership: Membership) -> None:
        self._db = db
        self._membership = membership

    def routes(self) -> list[Route]:
        return [Route("/core/v1/cluster", self.show, methods=["GET"])]

    async def show(self, request: Request) -> Response:
        since = self._membership.since()
        rows = await self._db.read(cluster.processes)
        processes = [
            {
                **{field: row[field] for field in FIELDS},
                "live": row["stopped_at"] is None
                and (not self._membership.shared or int(row["heartbeat_at"]) >= since),
                "devices": self._devices(row),
            }
            for row in rows
        ]
        body = {
            "object": "x_corebox.cluster",
            "shared": self._membership.shared,
            "process_id": self._membership.process_id,
            "processes": processes,
        }
        return json(body)

    def _devices(self, row: dict[str, Any]) -> list[str]:
        """This process's connections as they are now; a peer's as last recorded."""
        if row["id"] == self._membership.process_id:
            return sorted(set(self._membership.devices()))
        return list(row["devices"])
