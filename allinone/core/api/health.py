"""`/healthz` (the process is alive) and `/readyz` (the readiness evidence of seed 003).

Ready means, with evidence for each: storage reads and writes, the scheduler runs, and at
least one Runtime is connected and has declared its capabilities. A 503 names what is
missing. `confinement` tells how the in-process Runtime confines commands.

Who sees what: without a key, only the status and each check's `ok`: no version, path,
port, configuration or device identity. A project's API key adds the version and the
evidence that is about the service rather than the owner's machine (storage latency and
schema version, how many Runtimes are connected and which agent kinds they offer). The
Core key sees all of it, with the uptime (under `config`), how many turns are active
and queued and how many of those are paused or suspended at a checkpoint to be continued
by a new claim (`turns`: `paused`, `resuming`), and the `setup` check: the data
directory, secrets, workspace roots and clock checks of `corebox doctor`, each with its
fix. Storage is reported failing from the moment any write fails for lack of disk or a
read-only file until a write other than this probe commits again (an API write, a
settlement retry, or the minutely journal prune).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone import __version__
from allinone.core.api.auth import Kind, principal_of
from allinone.core.api.common import json
from allinone.core.gateway.registry import Registry
from allinone.core.ids import Clock
from allinone.core.overlays import view as overlay_view
from storage import overlays as overlay_rows
from storage import tenancy, turns
from storage.database import Database, Tx
from storage.errors import StorageError

# Per check, the evidence a project's key may see besides `ok`.
PROJECT_FIELDS: dict[str, tuple[str, ...]] = {
    "storage": ("schema_version", "latency_ms", "failure"),
    "runtime": ("connected_count", "agent_kinds"),
    "confinement": ("kind", "abi"),
}


class Access(enum.Enum):
    PUBLIC = "public"
    PROJECT = "project"
    OWNER = "owner"


ACCESS = {Kind.ANONYMOUS: Access.PUBLIC, Kind.PROJECT: Access.PROJECT, Kind.CORE: Access.OWNER}


class Health:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        scheduler_running: Callable[[], bool],
        clock: Clock,
        config_summary: dict[str, Any],
        confinement: dict[str, Any] | None = None,
        draining: Callable[[], bool] = lambda: False,
        setup: Callable[[], tuple[bool, list[dict[str, Any]]]] | None = None,
    ) -> None:
        """`setup` returns the set-up checks `corebox doctor` also runs (whether all that
        sessions need holds, and each check); its evidence is the `setup` check."""
        self._draining = draining
        self._confinement = confinement or {"kind": "none"}
        self._setup = setup
        self._started_at = time.monotonic()
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

    async def access(self, request: Request) -> Access:
        """The caller's view, from the principal the `OPTIONAL` policy resolved: a missing
        or unknown key is the public view, never a 401, so probes without credentials
        keep working."""
        return ACCESS[principal_of(request).kind]

    async def healthz(self, request: Request) -> Response:
        body: dict[str, Any] = {"status": "alive"}
        if await self.access(request) is not Access.PUBLIC:
            body["version"] = __version__
        return json(body)

    async def _storage(self) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            now = self._clock.now()

            async def probe(tx: Tx) -> None:
                await tenancy.probe(tx, now)

            await self._db.write(probe, probe=True)
            ok = await self._db.read(tenancy.probe_written_at) == now
        except StorageError as exc:
            return {"ok": False, "error": type(exc).__name__, **self._failure()}
        # The probe needs little space: a real write that failed since is what counts.
        failing = self._failure()
        return {
            "ok": ok and not failing,
            "schema_version": self._db.schema_version,
            "backend": self._db.backend,
            "path": self._db.location,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            "bytes": await self._db.size_bytes(),
            "activity": self._db.counters(),
            **failing,
        }

    async def _turns(self) -> dict[str, Any]:
        """The work in hand (a state, never a failure; a storage failure is the storage
        check's)."""
        try:
            return {"ok": True, **await self._db.read(turns.counts)}
        except StorageError as exc:
            return {"ok": True, "error": type(exc).__name__}

    def _failure(self) -> dict[str, Any]:
        failure = self._db.failure
        return {} if failure is None else {"failure": failure.reason}

    async def evidence(self, owner: bool = True) -> tuple[bool, dict[str, Any]]:
        """Every check with its full evidence (the Core key's view). Without `owner`, the
        turns in hand and the active overlays are not read: only the Core key sees them,
        and neither check ever fails, so readiness is the same."""
        checks: dict[str, Any] = {"storage": await self._storage()}
        checks["scheduler"] = {"ok": self._scheduler_running()}
        runtimes = [c.describe() for c in self._registry if not c.closed.is_set()]
        declared = [r for r in runtimes if r["declared"] and r["agent_kinds"]]
        checks["runtime"] = {
            "ok": bool(declared),
            "connected": runtimes,
            "connected_count": len(runtimes),
            "agent_kinds": sorted({kind for r in declared for kind in r["agent_kinds"]}),
        }
        uptime = round(time.monotonic() - self._started_at)
        checks["config"] = {"ok": True, "uptime_seconds": uptime, **self._config}
        checks["turns"] = await self._turns() if owner else {"ok": True}
        # How commands run in workspaces are confined (`none` is a state, not a failure).
        checks["confinement"] = {"ok": True, **self._confinement}
        # Draining (seed 003): no new turn is claimed; running turns pause at a safe point.
        checks["drain"] = {"ok": not self._draining(), "draining": self._draining()}
        # Active safety overlays (a state, not a failure; shown to the Core key only).
        checks["overlays"] = (
            {"ok": True, "active": await self._overlays()} if owner else {"ok": True}
        )
        if self._setup is not None:
            ok, found = self._setup()
            checks["setup"] = {"ok": ok, "checks": found}
        ready = all(check["ok"] for check in checks.values())
        return ready, checks

    async def _overlays(self) -> list[dict[str, Any]] | None:
        try:
            rows = await self._db.read(overlay_rows.active)
        except StorageError:
            return None  # the storage check reports the failure
        return [overlay_view(row) for row in rows]

    async def readyz(self, request: Request) -> Response:
        access = await self.access(request)
        ready, checks = await self.evidence(owner=access is Access.OWNER)
        missing = [name for name, check in checks.items() if not check["ok"]]
        status = "ready" if ready else "draining" if self._draining() else "not_ready"
        body: dict[str, Any] = {"status": status}
        if access is not Access.PUBLIC:
            body["version"] = __version__
        body["checks"] = visible(checks, access)
        body["missing"] = missing
        return json(body, 200 if ready else 503)


def visible(checks: dict[str, Any], access: Access) -> dict[str, Any]:
    """The part of the evidence `access` may see (see the module docstring)."""
    if access is Access.OWNER:
        return checks
    shown: dict[str, Any] = {}
    for name, check in checks.items():
        fields = PROJECT_FIELDS.get(name, ()) if access is Access.PROJECT else ()
        shown[name] = {"ok": check["ok"], **{f: check[f] for f in fields if f in check}}
    return shown
