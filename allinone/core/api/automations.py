"""`/v1/agents/automations`: schedules that start sessions or post into one.

Create validates the schedule (a 5-field cron expression in an IANA zone, or a future
`run_at`) and every target reference inside the caller's project, stores the automation
and registers its job. Update replaces `target` and `metadata` whole; `expression` and
`timezone` apply to periodic automations only, `run_at` to one-time automations only and
only before their occurrence was recorded. Pause and resume move between `active` and
`paused`; a one-time automation that ran is `completed`.
"""

from __future__ import annotations

import logging
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import automation_targets
from allinone.core.agents import check_metadata
from allinone.core.api.auth import project_of
from allinone.core.api.common import (
    decode_body,
    json,
    list_params,
    read_page,
)
from allinone.core.api.decoding import convert
from allinone.core.api.errors import invalid, not_found
from allinone.core.api.listing import page, single
from allinone.core.automations import Automations, cron_trigger
from allinone.core.errors import Conflict
from allinone.core.host_grants import HostGrants
from allinone.core.ids import Clock, Ids
from allinone.core.shapes import automation_models as shapes
from allinone.core.shapes.models import MAX_SESSION_BODY_BYTES
from storage import automations as rows
from storage.database import Database

log = logging.getLogger(__name__)
BASE = "/v1/agents/automations"


def _conflict(message: str) -> Conflict:
    return Conflict(message)


def check_schedule(expression: str, timezone: str) -> None:
    try:
        cron_trigger(expression, "UTC")
    except ValueError as exc:
        raise invalid("expression must be a 5-field cron expression.", "expression") from exc
    if len(expression.split()) != 5:
        raise invalid("expression must be a 5-field cron expression.", "expression")
    try:
        cron_trigger(expression, timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise invalid("timezone must be an IANA time zone name.", "timezone") from exc


class AutomationsApi:
    def __init__(
        self,
        db: Database,
        automations: Automations,
        ids: Ids,
        clock: Clock,
        grants: HostGrants | None = None,
    ) -> None:
        self._grants = grants
        self._db = db
        self._automations = automations
        self._ids = ids
        self._clock = clock

    def routes(self) -> list[Route]:
        one = BASE + "/{automation_id}"
        return [
            Route(BASE, self.create, methods=["POST"]),
            Route(BASE, self.list_automations, methods=["GET"]),
            Route(one, self.retrieve, methods=["GET"]),
            Route(one, self.update, methods=["POST"]),
            Route(one, self.delete, methods=["DELETE"]),
            Route(one + "/pause", self.pause, methods=["POST"]),
            Route(one + "/resume", self.resume, methods=["POST"]),
            Route(one + "/invocations", self.invoke, methods=["POST"]),
            Route(one + "/invocations", self.list_invocations, methods=["GET"]),
            Route(one + "/invocations/{invocation_id}", self.retrieve_invocation, methods=["GET"]),
        ]

    def _check_host(self, project: str, public: dict[str, Any]) -> None:
        """A `self_hosted` target directory must be one the project may use (it is
        checked again whenever the automation fires)."""
        environment = public.get("environment") or {}
        directory = environment.get("workspace_directory")
        if self._grants is not None and environment.get("type") == "self_hosted" and directory:
            self._grants.check_directory(
                project, str(directory), "target.environment.workspace_directory"
            )

    async def _row(self, project: str, automation_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get(r, project, automation_id))
        if row is None:
            raise not_found()
        return row

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        raw = await decode_body(request, dict, MAX_SESSION_BODY_BYTES)
        body: shapes.AutomationCreate = convert(raw, shapes.AutomationCreate)
        now = self._clock.now()
        row: dict[str, Any] = {"type": "periodic"}
        if isinstance(body, shapes.PeriodicAutomationCreate):
            check_schedule(body.expression, body.timezone)
            row.update(expression=body.expression, timezone=body.timezone)
        else:
            if body.run_at <= now:
                raise invalid("run_at must be a future Unix timestamp in seconds.", "run_at")
            row.update(type="once", run_at=body.run_at)
        prepared = await self._db.read(
            lambda r: automation_targets.prepare(r, project, body.target)
        )
        self._check_host(project, prepared.public)
        automation_id = self._ids.new("auto")
        row.update(
            id=automation_id,
            project_id=project,
            name=body.name,
            metadata=check_metadata(None if body.metadata is UNSET else body.metadata),
            target=prepared.public,
            target_session_id=prepared.session_id,
            created_by={"type": "developer"},
            created_at=now,
        )
        sealed = self._automations.seal_target(project, automation_id, prepared.request)
        return json(shapes.automation(await self._automations.create(row, sealed)))

    async def list_automations(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        session_id = single(request, "session_id")
        found, more = await read_page(
            self._db,
            lambda r: rows.page(
                r,
                project,
                session_id=session_id,
                after=params.after,
                limit=params.limit,
                order=params.order,
            ),
        )
        return json(page([shapes.automation(row) for row in found], more))

    async def retrieve(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._row(project, request.path_params["automation_id"])
        return json(shapes.automation(row))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        automation_id = request.path_params["automation_id"]
        body = await decode_body(request, shapes.AutomationUpdate, MAX_SESSION_BODY_BYTES)
        row = await self._row(project, automation_id)
        fields: dict[str, Any] = {}
        if body.name is not UNSET:
            fields["name"] = body.name
        if body.metadata is not UNSET:
            fields["metadata"] = check_metadata(body.metadata)
        if body.expression is not UNSET or body.timezone is not UNSET:
            if row["type"] != "periodic":
                param = "expression" if body.expression is not UNSET else "timezone"
                raise invalid(f"{param} applies to periodic automations only.", param)
            expression = row["expression"] if body.expression is UNSET else body.expression
            timezone = row["timezone"] if body.timezone is UNSET else body.timezone
            check_schedule(expression, timezone)
            fields.update(expression=expression, timezone=timezone)
        if body.run_at is not UNSET:
            await self._check_run_at(row, body.run_at)
            fields["run_at"] = body.run_at
        sealed = None
        if body.target is not UNSET:
            target = body.target
            if target.__struct_config__.tag != row["target"]["type"]:
                raise invalid("target.type cannot change.", "target.type")
            prepared = await self._db.read(lambda r: automation_targets.prepare(r, project, target))
            self._check_host(project, prepared.public)
            fields.update(target=prepared.public, target_session_id=prepared.session_id)
            sealed = self._automations.seal_target(project, automation_id, prepared.request)
        stored = await self._automations.change(project, automation_id, fields, sealed)
        return json(shapes.automation(stored))

    async def _check_run_at(self, row: dict[str, Any], run_at: int) -> None:
        if row["type"] != "once":
            raise invalid("run_at applies to one-time automations only.", "run_at")
        if run_at <= self._clock.now():
            raise invalid("run_at must be a future Unix timestamp in seconds.", "run_at")
        occurred = await self._db.read(lambda r: rows.has_occurrence(r, row["id"], row["run_at"]))
        if occurred or row["status"] == "completed":
            raise _conflict("This one-time automation already ran; run_at cannot change.")

    async def delete(self, request: Request) -> Response:
        project = project_of(request)
        automation_id = request.path_params["automation_id"]
        await self._automations.delete(project, automation_id)
        return json(shapes.AutomationDeleted(id=automation_id))

    async def pause(self, request: Request) -> Response:
        return await self._move(request, "active", "paused")

    async def resume(self, request: Request) -> Response:
        return await self._move(request, "paused", "active")

    async def _move(self, request: Request, source: str, target: str) -> Response:
        project = project_of(request)
        automation_id = request.path_params["automation_id"]
        stored = await self._automations.move(project, automation_id, source, target)
        return json(shapes.automation(stored))

    async def invoke(self, request: Request) -> Response:
        project = project_of(request)
        invocation = await self._automations.invoke(project, request.path_params["automation_id"])
        return json(shapes.invocation(invocation))

    async def list_invocations(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        row = await self._row(project, request.path_params["automation_id"])
        found, more = await read_page(
            self._db,
            lambda r: rows.invocation_page(
                r, row["id"], after=params.after, limit=params.limit, order=params.order
            ),
        )
        return json(page([shapes.invocation(item) for item in found], more))

    async def retrieve_invocation(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._row(project, request.path_params["automation_id"])
        found = await self._db.read(
            lambda r: rows.get_invocation(r, row["id"], request.path_params["invocation_id"])
        )
        if found is None:
            raise not_found()
        return json(shapes.invocation(found))
