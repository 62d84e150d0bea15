"""`/healthz` (the process is alive) and `/readyz` (the readiness evidence of seed 003).

Ready means, with evidence for each: storage reads and writes, the scheduler runs, and at
least one Runtime is connected and has declared its capabilities. A 503 names what is
missing. `confinement` tells how the in-process Runtime confines commands.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone import __version__
from allinone.core.api.common import json
from allinone.core.gateway.registry import Registry
from allinone.core.ids import Clock
from storage import tenancy
from storage.database import Database, Tx


class Health:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        scheduler_running: Callable[[], bool],
        clock: Clock,
        config_summary: dict[str, Any],
        confinement: dict[str, Any] | None = None,
    ) -> None:
        self._confinement = confinement or {"kind": "none"}
        self._db = db
        self._registry = registry
        self._scheduler_running = scheduler_running
        self._clock = clock
        self._config = config_summary

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/readyz", self.readyz, methods=["GET"]),
        ]

    async def healthz(self, request: Request) -> Response:
        return json({"status": "alive", "version": __version__})

    async def evidence(self) -> tuple[bool, dict[str, Any]]:
        checks: dict[str, Any] = {}
        started = time.perf_counter()
        try:
            now = self._clock.now()

            async def probe(tx: Tx) -> None:
                await tenancy.probe(tx, now)

            await self._db.write(probe)
            row = await self._db.read(
                lambda r: r.fetchone("SELECT written_at FROM health_probe WHERE id = 1")
            )
            ok = row is not None and int(row["written_at"]) == now
            checks["storage"] = {
                "ok": ok,
                "schema_version": self._db.schema_version,
                "path": str(self._db.path),
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            }
        except Exception as exc:
            checks["storage"] = {"ok": False, "error": type(exc).__name__}
        checks["scheduler"] = {"ok": self._scheduler_running()}
        runtimes = [c.describe() for c in self._registry if not c.closed.is_set()]
        declared = [r for r in runtimes if r["declared"] and r["agent_kinds"]]
        checks["runtime"] = {"ok": bool(declared), "connected": runtimes}
        checks["config"] = {"ok": True, **self._config}
        # How commands run in workspaces are confined (`none` is a state, not a failure).
        checks["confinement"] = {"ok": True, **self._confinement}
        ready = all(check["ok"] for check in checks.values())
        return ready, checks

    async def readyz(self, request: Request) -> Response:
        ready, checks = await self.evidence()
        missing = [name for name, check in checks.items() if not check["ok"]]
        body = {
            "status": "ready" if ready else "not_ready",
            "version": __version__,
            "checks": checks,
            "missing": missing,
        }
        return json(body, 200 if ready else 503)
