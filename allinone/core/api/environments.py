"""`/v1/agents/environments/**` and `/v1/agents/sessions/{id}/artifacts/**`."""

from __future__ import annotations

import asyncio
import base64
import binascii
from functools import partial
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import render
from allinone.core.api.auth import project_of
from allinone.core.api.common import (
    decode_body,
    idempotency_key,
    json,
    keyset_page,
    list_limit,
    list_order,
    list_params,
)
from allinone.core.api.decoding import convert
from allinone.core.api.errors import invalid, not_found
from allinone.core.api.listing import single
from allinone.core.environments import Environments, artifact_body, decode_inline
from allinone.core.errors import NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.sessions.idempotency import digest
from allinone.core.shapes.template_models import (
    EnvironmentParam,
    FileIdFileParam,
    FileParam,
    InlineFileParam,
)
from allinone.core.workspace_paths import WORKSPACE, check_listing_path, check_path
from storage import environments as env_rows
from storage import sessions
from storage.database import Database

# The `type` filter of the environment list: the SDK's value, and the type of an
# environment a session binds on this machine.
ENVIRONMENT_TYPES = ("openai_hosted", "self_hosted")


class EnvironmentCreate(msgspec.Struct, forbid_unknown_fields=True):
    environment: EnvironmentParam
    vault_ids: list[str] | None = None


# A file added to an environment: inline data or an uploaded file, as the SDK sends it.
EnvironmentFileCreate = FileParam


class EnvironmentsApi:
    def __init__(self, db: Database, environments: Environments, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._environments = environments
        self._ids = ids
        self._clock = clock

    def routes(self) -> list[Route]:
        base = "/v1/agents/environments"
        artifacts = "/v1/agents/sessions/{session_id}/artifacts"
        return [
            Route(base, self.create, methods=["POST"]),
            Route(base, self.list, methods=["GET"]),
            Route(base + "/{environment_id}", self.retrieve, methods=["GET"]),
            Route(base + "/{environment_id}/files", self.create_file, methods=["POST"]),
            Route(base + "/{environment_id}/files", self.list_files, methods=["GET"]),
            Route(artifacts, self.list_artifacts, methods=["GET"]),
            Route(artifacts + "/{artifact_id}", self.retrieve_artifact, methods=["GET"]),
            Route(artifacts + "/{artifact_id}", self.delete_artifact, methods=["DELETE"]),
            Route(artifacts + "/{artifact_id}/content", self.artifact_content, methods=["GET"]),
        ]

    async def _info(self, row: dict[str, Any]) -> dict[str, Any]:
        files = await self._db.read(partial(env_rows.files_of, environment_id=row["id"]))
        return render.environment_info(row, files)

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, EnvironmentCreate, 16 * 1024 * 1024)
        spec: dict[str, Any] = msgspec.to_builtins(body.environment)
        if spec.get("type") != "openai_hosted":
            raise invalid("Only openai_hosted environments are created here.", "environment.type")
        if body.vault_ids:
            # A session's credentials come from its own vault_ids; an environment keeps
            # none, so vaults given here would never reach a command or an MCP server.
            raise invalid(
                "vault_ids on an environment are not supported: pass them to"
                " sessions.create, which makes their credentials available to the session.",
                "vault_ids",
                code="unsupported_or_invalid_configuration",
            )
        if spec.get("environment_template_id"):
            raise invalid(
                "Environment templates cannot be applied in this build yet.",
                "environment.environment_template_id",
                code="unsupported_or_invalid_configuration",
            )
        key = idempotency_key(request)
        request_hash = digest(spec)
        environment_id = await self._environments.create_standalone(
            project, spec, key, request_hash
        )
        row = await self._db.read(partial(env_rows.get_any, environment_id=environment_id))
        assert row is not None
        return json(await self._info(row))

    async def list(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        type_ = single(request, "type")
        if type_ is not None and type_ not in ENVIRONMENT_TYPES:
            raise invalid(f"type must be one of {', '.join(ENVIRONMENT_TYPES)}.", "type")
        where = "project_id = ?"
        args: tuple[str, ...] = (project,)
        if type_:
            where, args = "project_id = ? AND type = ?", (project, type_)
        rows, more = await keyset_page(
            self._db, params, table="environments", where=where, args=args
        )
        data = []
        for row in rows:
            record = dict(row)
            record["config"] = msgspec.json.decode(record["config"])
            if record.get("setup"):
                record["setup"] = msgspec.json.decode(record["setup"])
            data.append(await self._info(record))
        return json(render.page(data, more))

    async def _environment(self, project: str, environment_id: str) -> dict[str, Any]:
        row = await self._db.read(
            partial(env_rows.get, project_id=project, environment_id=environment_id)
        )
        if row is None:
            raise not_found()
        return row

    async def retrieve(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._environment(project, request.path_params["environment_id"])
        return json(await self._info(row))

    async def create_file(self, request: Request) -> Response:
        project = project_of(request)
        environment_id = request.path_params["environment_id"]
        await self._environment(project, environment_id)
        raw = await decode_body(request, dict, 8 * 1024 * 1024)
        body: FileIdFileParam | InlineFileParam = convert(raw, EnvironmentFileCreate)
        path = check_path(body.path, "path")
        file_id = None
        if isinstance(body, InlineFileParam):
            data = decode_inline(body.data, "data")
        else:
            upload = await self._environments.bodies.read(project, body.file_id)
            if upload is None:
                raise NotFound(param="file_id")
            data, file_id = upload, body.file_id
        kind = str(body.__struct_config__.tag)
        written = await self._environments.write_file(
            project, environment_id, path, data, kind, file_id
        )
        return json(written)

    async def list_files(self, request: Request) -> Response:
        project = project_of(request)
        environment_id = request.path_params["environment_id"]
        await self._environment(project, environment_id)
        query = request.query_params
        path = check_listing_path(query.get("path") or WORKSPACE, "path")
        limit = list_limit(query.get("limit"))
        order = list_order(query.get("order"))
        start = _page_token(query.get("page"), path, order, limit)
        files = await self._environments.list_files(project, environment_id, path)
        files.sort(key=lambda f: f["path"].split("/"), reverse=order == "desc")
        window = files[start : start + limit]
        more = start + limit < len(files)
        token = _token(start + limit, path, order, limit) if more else None
        return json({"object": "page", "data": window, "has_more": more, "next": token})

    async def _session(self, project: str, session_id: str) -> dict[str, Any]:
        row = await self._db.read(partial(sessions.get, project_id=project, session_id=session_id))
        if row is None:
            raise not_found()
        return row

    async def list_artifacts(self, request: Request) -> Response:
        project = project_of(request)
        session = await self._session(project, request.path_params["session_id"])
        params = list_params(request)
        where = "session_id = ? AND deleted_at IS NULL"
        args: tuple[str, ...] = (session["id"],)
        environment_id = request.query_params.get("environment_id")
        if environment_id:
            where += " AND environment_id = ?"
            args = (session["id"], environment_id)
        rows, more = await keyset_page(
            self._db,
            params,
            table="artifacts",
            where=where,
            args=args,
            cursor_message="after is not a valid artifact ID",
        )
        return json(render.page([render.artifact(dict(row)) for row in rows], more))

    async def _artifact(self, request: Request) -> dict[str, Any]:
        project = project_of(request)
        session = await self._session(project, request.path_params["session_id"])
        row = await self._db.read(
            partial(
                env_rows.artifact,
                session_id=session["id"],
                artifact_id=request.path_params["artifact_id"],
            )
        )
        if row is None:
            raise not_found()
        return row

    async def retrieve_artifact(self, request: Request) -> Response:
        return json(render.artifact(await self._artifact(request)))

    async def artifact_content(self, request: Request) -> Response:
        row = await self._artifact(request)
        body = await asyncio.to_thread(artifact_body, row, self._environments.blobs)
        return Response(body, media_type="application/octet-stream")

    async def delete_artifact(self, request: Request) -> Response:
        row = await self._artifact(request)
        await self._environments.delete_artifact(row["id"])
        return json({"id": row["id"], "object": "agent.session.artifact.deleted", "deleted": True})


def _token(start: int, path: str, order: str, limit: int) -> str:
    raw = msgspec.json.encode({"start": start, "path": path, "order": order, "limit": limit})
    return base64.urlsafe_b64encode(raw).decode()


def _page_token(token: str | None, path: str, order: str, limit: int) -> int:
    """A page token is bound to the path, order and limit it was issued for."""
    if not token:
        return 0
    try:
        data = msgspec.json.decode(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, msgspec.DecodeError) as exc:
        raise invalid("page is not a valid page token.", "page") from exc
    if not isinstance(data, dict) or (data.get("path"), data.get("order"), data.get("limit")) != (
        path,
        order,
        limit,
    ):
        raise invalid("page was issued for a different path, order or limit.", "page")
    start = data.get("start")
    if not isinstance(start, int) or start < 0:
        raise invalid("page is not a valid page token.", "page")
    return start
