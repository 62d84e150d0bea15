"""Automation schedules and deliveries.

The database is the source of truth; APScheduler (the app's AsyncIOScheduler) only holds
in-memory jobs that `start()` rebuilds from it, so schedules survive restarts:
- `periodic`: a CronTrigger from the 5-field expression in its IANA time zone;
  occurrences more than a minute late are skipped and missed ones coalesce.
- `once`: a DateTrigger at `run_at`; if the process was down at that moment it runs as
  soon as the schedule is rebuilt.

A delivery is recorded first (`queued`, durable), then performed, then settled to
`completed`, `failed` or `skipped` (`pending_delivery` when the target session is busy).
A scheduled occurrence is recorded at most once per (automation, scheduled_at), also
when several Core processes share the database and each holds the schedule: the one
whose record commits delivers it. Each process follows the others' changes with
`resync` (a schedule whose row changed is registered again), and a one-off job whose
`run_at` moved since it was registered does nothing. The
delivery's idempotency key is derived from the invocation id, so an invocation left
`queued` by a crash is replayed at the next start without creating a second session or
a second input.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from allinone.core.errors import Conflict, NotFound, Refused
from allinone.core.ids import Clock, Ids
from allinone.core.sealing import Sealer
from allinone.core.sessions.admission import Admission
from allinone.core.shapes import automation_models as shapes
from allinone.core.shapes.models import (
    InputMessageParam,
    InputTextParam,
    MessageInputEvent,
    SessionCreate,
)
from storage import automations as rows
from storage import sessions, tenancy, turns
from storage import vaults as vault_rows
from storage.database import Database, Tx
from storage.errors import Conflict as StorageConflict

log = logging.getLogger(__name__)
LATE_LIMIT_SECONDS = 59
BUSY_CODES = frozenset({"active_turn_not_steerable", "turn_conflict", "conflict_error"})


def cron_trigger(expression: str, timezone: str) -> CronTrigger:
    """Raises ValueError (or a ZoneInfo lookup error) for an invalid expression or zone."""
    return CronTrigger.from_crontab(expression, timezone=ZoneInfo(timezone))


def _schedule_of(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a registered job depends on: a change to any of it registers it again."""
    return (row["type"], row.get("expression"), row.get("timezone"), row.get("run_at"))


def target_context(project_id: str, automation_id: str) -> str:
    return f"automations:{project_id}:{automation_id}"


class Automations:
    def __init__(
        self,
        db: Database,
        admission: Admission,
        scheduler: AsyncIOScheduler,
        sealer: Sealer,
        ids: Ids,
        clock: Clock,
    ) -> None:
        self._db = db
        self._admission = admission
        self._scheduler = scheduler
        self._sealer = sealer
        self._ids = ids
        self._clock = clock
        self._stopped = False
        self._registered: dict[str, tuple[Any, ...]] = {}

    def seal_target(self, project_id: str, automation_id: str, request: dict[str, Any]) -> bytes:
        return self._sealer.seal_json(request, target_context(project_id, automation_id))

    async def start(self) -> None:
        """Register every active schedule, then replay deliveries a stop interrupted."""
        for row in await self._db.read(rows.active):
            self.schedule(row)
        for invocation in await self._db.read(rows.queued_invocations):
            automation_id: str = invocation["automation_id"]
            automation = await self._db.read(partial(rows.get_live, automation_id=automation_id))
            if automation is not None:
                await self._deliver(invocation, automation)
                continue
            await self._settle(
                invocation["id"],
                {"status": "failed", "error": ("resource_not_found", "The automation is gone.")},
            )
        log.debug("automation schedules registered")

    def stop(self) -> None:
        """Stop firing; jobs are rebuilt from the database at the next start."""
        self._stopped = True
        for job in self._scheduler.get_jobs():
            if job.id.startswith("automation:"):
                job.remove()

    def schedule(self, row: dict[str, Any]) -> None:
        """(Re)register the job for `row`, or drop it when the automation is not active.

        Never raises: a stored schedule the scheduler cannot hold (written by an older
        build) is logged and left unscheduled, so it cannot fail a request that already
        committed, nor the start of the process."""
        self.unschedule(row["id"])
        if self._stopped or row["status"] != "active" or row.get("deleted_at") is not None:
            return
        self._registered[row["id"]] = _schedule_of(row)
        try:
            self._add_job(row)
        except (ValueError, OverflowError, OSError, ZoneInfoNotFoundError) as exc:
            log.error(
                "automation %s has a schedule that cannot be registered: %s",
                row["id"],
                type(exc).__name__,
            )

    def _add_job(self, row: dict[str, Any]) -> None:
        job_id = f"automation:{row['id']}"
        if row["type"] == "periodic":
            self._scheduler.add_job(
                self._fire_periodic,
                cron_trigger(row["expression"], row["timezone"]),
                args=[row["id"]],
                id=job_id,
                coalesce=True,
                max_instances=1,
                misfire_grace_time=LATE_LIMIT_SECONDS,
            )
            return
        self._scheduler.add_job(
            self.fire,
            DateTrigger(run_date=datetime.fromtimestamp(row["run_at"], tz=UTC)),
            args=[row["id"], row["run_at"]],
            id=job_id,
            misfire_grace_time=None,
        )

    async def resync(self) -> None:
        """Follow the changes other Core processes made: register the schedules whose
        row changed or appeared, drop the ones no longer active."""
        if self._stopped:
            return
        current = {row["id"]: row for row in await self._db.read(rows.active)}
        for automation_id in set(self._registered) - set(current):
            self.unschedule(automation_id)
        for automation_id, row in current.items():
            if self._registered.get(automation_id) != _schedule_of(row):
                self.schedule(row)

    def unschedule(self, automation_id: str) -> None:
        self._registered.pop(automation_id, None)
        with contextlib.suppress(JobLookupError):
            self._scheduler.remove_job(f"automation:{automation_id}")

    async def _fire_periodic(self, automation_id: str) -> None:
        row = await self._db.read(lambda r: rows.get_live(r, automation_id))
        if row is None or row["type"] != "periodic":
            return
        trigger = cron_trigger(row["expression"], row["timezone"])
        now = datetime.now(tz=UTC)
        due = trigger.get_next_fire_time(None, now - timedelta(seconds=LATE_LIMIT_SECONDS))
        scheduled_at = int(due.timestamp()) if due is not None else self._clock.now()
        await self.fire(automation_id, scheduled_at)

    async def fire(self, automation_id: str, scheduled_at: int) -> None:
        """Record and deliver one scheduled occurrence (at most once)."""
        if self._stopped:
            return
        row = await self._db.read(lambda r: rows.get_live(r, automation_id))
        if row is None or row["status"] != "active":
            return
        if row["type"] == "once" and row["run_at"] != scheduled_at:
            return  # moved since this job was registered; the new one fires it
        project = await self._db.read(lambda r: tenancy.get_project(r, row["project_id"]))
        if project is None or project["archived_at"] is not None:
            log.info("automation %s belongs to an archived project; not run", automation_id)
            return
        now = self._clock.now()
        invocation: dict[str, Any] = {
            "id": self._ids.new("autoinv"),
            "automation_id": automation_id,
            "project_id": row["project_id"],
            "source": "automation",
            "automation_snapshot": msgspec.to_builtins(shapes.automation(row)),
            "scheduled_at": scheduled_at,
            "created_at": now,
        }

        async def job(tx: Tx) -> None:
            await rows.insert_invocation(tx, invocation)
            if row["type"] == "once":
                await rows.move_status(tx, automation_id, ("active",), "completed", now)

        try:
            await self._db.write(job)
        except StorageConflict:
            log.info("automation %s occurrence %d already recorded", automation_id, scheduled_at)
            return
        stored = await self._db.read(
            lambda r: rows.get_invocation(r, automation_id, invocation["id"])
        )
        assert stored is not None
        await self._deliver(stored, row)

    # Changes: each runs in one transaction; the schedule follows the committed row.
    async def get(self, project_id: str, automation_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get(r, project_id, automation_id))
        if row is None:
            raise NotFound()
        return row

    async def create(self, row: dict[str, Any], sealed: bytes) -> dict[str, Any]:
        """Store a checked automation (`row`, its target sealed) and schedule it."""

        async def job(tx: Tx) -> None:
            await rows.insert(tx, row, sealed)

        await self._db.write(job)
        stored = await self.get(row["project_id"], row["id"])
        self.schedule(stored)
        log.info(
            "created %s automation %s in project %s", row["type"], row["id"], row["project_id"]
        )
        return stored

    async def change(
        self,
        project_id: str,
        automation_id: str,
        fields: dict[str, Any],
        sealed: bytes | None,
    ) -> dict[str, Any]:
        """Apply checked `fields` (and a new sealed target) and reschedule."""
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.update(tx, project_id, automation_id, fields, now, sealed)

        if fields and not await self._db.write(job):
            raise NotFound()
        stored = await self.get(project_id, automation_id)
        self.schedule(stored)
        return stored

    async def delete(self, project_id: str, automation_id: str) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete(tx, project_id, automation_id, now)

        if not await self._db.write(job):
            raise NotFound()
        self.unschedule(automation_id)
        log.info("deleted automation %s in project %s", automation_id, project_id)

    async def move(
        self, project_id: str, automation_id: str, source: str, target: str
    ) -> dict[str, Any]:
        """Pause or resume: `source` -> `target` (no change from any other status)."""
        row = await self.get(project_id, automation_id)
        if row["status"] == "completed":
            raise Conflict("This one-time automation already ran.")
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.move_status(tx, automation_id, (source,), target, now)

        if row["status"] == source:
            await self._db.write(job)
        stored = await self.get(project_id, automation_id)
        self.schedule(stored)
        return stored

    async def invoke(self, project_id: str, automation_id: str) -> dict[str, Any]:
        """A manual delivery now; the saved schedule is unchanged. Returns the settled
        invocation row. Raises 404 when the automation is not in the project."""
        row = await self._db.read(lambda r: rows.get(r, project_id, automation_id))
        if row is None:
            raise NotFound()
        invocation: dict[str, Any] = {
            "id": self._ids.new("autoinv"),
            "automation_id": automation_id,
            "project_id": project_id,
            "source": "manual",
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> None:
            await rows.insert_invocation(tx, invocation)

        await self._db.write(job)
        stored = await self._db.read(
            lambda r: rows.get_invocation(r, automation_id, invocation["id"])
        )
        assert stored is not None
        await self._deliver(stored, row)
        settled = await self._db.read(
            lambda r: rows.get_invocation(r, automation_id, invocation["id"])
        )
        assert settled is not None
        return settled

    async def _deliver(self, invocation: dict[str, Any], automation: dict[str, Any]) -> None:
        project_id = automation["project_id"]
        key = f"automation-{invocation['id']}"
        outcome: dict[str, Any]
        try:
            sealed = await self._db.read(lambda r: rows.sealed_target(r, automation["id"]))
            assert sealed is not None
            if not sealed:  # imported from a bundle, which never carries the sealed request
                raise Refused(
                    "The automation was imported without its target; update its target.",
                    code="target_not_imported",
                )
            target = self._sealer.open_json(sealed, target_context(project_id, automation["id"]))
            if target["type"] == "existing_session":
                outcome = await self._post_to_session(project_id, target, key)
            else:
                outcome = await self._new_session(project_id, target, key)
        except Refused as exc:
            outcome = {"status": "failed", "error": (exc.code or "invalid_request", exc.message)}
        except Exception as exc:
            log.error(
                "automation %s delivery %s failed: %s",
                automation["id"],
                invocation["id"],
                type(exc).__name__,
                exc_info=exc,
            )
            outcome = {"status": "failed", "error": ("internal_error", "The delivery failed.")}
        await self._settle(invocation["id"], outcome)
        log.info(
            "automation %s invocation %s %s", automation["id"], invocation["id"], outcome["status"]
        )

    async def _settle(self, invocation_id: str, outcome: dict[str, Any]) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await rows.settle_invocation(tx, invocation_id, now=now, **outcome)

        await self._db.write(job)

    async def _new_session(
        self, project_id: str, target: dict[str, Any], key: str
    ) -> dict[str, Any]:
        vault_ids: list[str] = target.get("vault_ids") or []
        missing = await self._db.read(
            partial(vault_rows.missing_vaults, project_id=project_id, vault_ids=vault_ids)
        )
        if missing:
            return {"status": "failed", "error": ("resource_not_found", "A vault is gone.")}
        body = msgspec.convert({k: v for k, v in target.items() if k != "type"}, SessionCreate)
        session_id, _ = await self._admission.create_session(project_id, body, key)
        return {"status": "completed", "session_id": session_id}

    async def _post_to_session(
        self, project_id: str, target: dict[str, Any], key: str
    ) -> dict[str, Any]:
        session_id = target["session_id"]
        session = await self._db.read(lambda r: sessions.get(r, project_id, session_id))
        if session is None:
            return {
                "status": "failed",
                "error": ("resource_not_found", "The target session no longer exists."),
            }
        if await self._db.read(lambda r: turns.active(r, session_id)) is not None:
            return {
                "status": "skipped",
                "skip_reason": "pending_delivery",
                "session_id": session_id,
            }
        message = InputMessageParam(
            role="user", content=[InputTextParam(text=target["instructions"])]
        )
        try:
            await self._admission.admit_inputs(
                project_id, session_id, [MessageInputEvent(input=[message])], key
            )
        except Refused as exc:
            if exc.status == 409 and exc.code in BUSY_CODES:
                return {
                    "status": "skipped",
                    "skip_reason": "pending_delivery",
                    "session_id": session_id,
                }
            raise
        return {"status": "completed", "session_id": session_id}
