"""`/v1/skills/**`: the Skills API of the official SDK (`client.skills`).

Create and new versions are multipart uploads: one zip in `files`, or the files of a
directory as `files[]` parts named by their relative paths. The body streams through a
size bound; parts spool to temporary files. Content routes answer the version's
normalised zip.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import render
from allinone.core.api.auth import project_of
from allinone.core.api.bodies import limited
from allinone.core.api.common import decode_body, json, keyset_page, list_params
from allinone.core.api.errors import invalid
from allinone.core.shapes import skill_models as shapes
from allinone.core.skills.bundles import MAX_ENTRIES, MAX_UPLOAD_BYTES, Bundle, normalise
from allinone.core.skills.catalog import Catalog, version_number
from storage.database import Database

BASE = "/v1/skills"
SKILL = BASE + "/{skill_id}"
VERSION = SKILL + "/versions/{version}"
MULTIPART_OVERHEAD = 1024 * 1024
FILE_FIELDS = ("files", "files[]")


class SkillsApi:
    def __init__(self, db: Database, catalog: Catalog) -> None:
        self._db = db
        self._catalog = catalog

    def routes(self) -> list[Route]:
        return [
            Route(BASE, self.create, methods=["POST"]),
            Route(BASE, self.list, methods=["GET"]),
            Route(SKILL, self.retrieve, methods=["GET"]),
            Route(SKILL, self.update, methods=["POST"]),
            Route(SKILL, self.delete, methods=["DELETE"]),
            Route(SKILL + "/content", self.content, methods=["GET"]),
            Route(SKILL + "/versions", self.create_version, methods=["POST"]),
            Route(SKILL + "/versions", self.list_versions, methods=["GET"]),
            Route(VERSION, self.retrieve_version, methods=["GET"]),
            Route(VERSION, self.delete_version, methods=["DELETE"]),
            Route(VERSION + "/content", self.version_content, methods=["GET"]),
        ]

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        async with _upload(request, allow_default=False) as (bundle, _):
            row = await self._catalog.create(project, bundle)
        return json(shapes.skill(row))

    async def list(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        rows, more = await keyset_page(
            self._db, params, table="skills", where="project_id = ?", args=(project,)
        )
        return json(render.page([shapes.skill(dict(row)) for row in rows], more))

    async def retrieve(self, request: Request) -> Response:
        row = await self._catalog.skill(project_of(request), request.path_params["skill_id"])
        return json(shapes.skill(row))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        skill_id = request.path_params["skill_id"]
        await self._catalog.skill(project, skill_id)
        body = await decode_body(request, shapes.SkillUpdate)
        if not (body.default_version.isascii() and body.default_version.isdigit()):
            raise invalid("default_version must be a version number.", "default_version")
        number = version_number(body.default_version, "default_version")
        row = await self._catalog.set_default(project, skill_id, number)
        return json(shapes.skill(row))

    async def delete(self, request: Request) -> Response:
        skill_id = request.path_params["skill_id"]
        await self._catalog.delete(project_of(request), skill_id)
        return json({"id": skill_id, "object": "skill.deleted", "deleted": True})

    async def content(self, request: Request) -> Response:
        data = await self._catalog.archive(
            project_of(request), request.path_params["skill_id"], None
        )
        return _zip(data)

    async def create_version(self, request: Request) -> Response:
        project = project_of(request)
        skill_id = request.path_params["skill_id"]
        await self._catalog.skill(project, skill_id)
        async with _upload(request, allow_default=True) as (bundle, make_default):
            row = await self._catalog.add_version(project, skill_id, bundle, make_default)
        return json(shapes.version(row))

    async def list_versions(self, request: Request) -> Response:
        project = project_of(request)
        skill_id = request.path_params["skill_id"]
        await self._catalog.skill(project, skill_id)
        params = list_params(request)
        rows, more = await keyset_page(
            self._db,
            params,
            table="skill_versions",
            where="skill_id = ?",
            args=(skill_id,),
            keys=("version", "id"),
        )
        return json(render.page([shapes.version(dict(row)) for row in rows], more))

    def _version(self, request: Request) -> tuple[str, str, int]:
        params = request.path_params
        return project_of(request), params["skill_id"], version_number(params["version"])

    async def retrieve_version(self, request: Request) -> Response:
        return json(shapes.version(await self._catalog.version(*self._version(request))))

    async def delete_version(self, request: Request) -> Response:
        project, skill_id, number = self._version(request)
        found = await self._catalog.delete_version(project, skill_id, number)
        return json(
            {
                "id": found["id"],
                "object": "skill.version.deleted",
                "deleted": True,
                "version": str(number),
            }
        )

    async def version_content(self, request: Request) -> Response:
        return _zip(await self._catalog.archive(*self._version(request)))


def _zip(data: bytes) -> Response:
    return Response(
        data,
        media_type="application/zip",
        headers={"content-disposition": 'attachment; filename="skill.zip"'},
    )


@asynccontextmanager
async def _upload(request: Request, *, allow_default: bool) -> AsyncIterator[tuple[Bundle, bool]]:
    """The uploaded bundle (normalised) and the `default` field of a version upload."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Upload the skill's files as multipart/form-data.", "files")
    try:
        form = await limited(request, MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD).form(
            max_files=MAX_ENTRIES, max_fields=8
        )
    except (MultiPartException, UnicodeDecodeError) as exc:
        raise invalid("The multipart body could not be read.", "files") from exc
    try:
        yield await _bundle(form), _default(form, allow_default)
    finally:
        await form.close()


async def _bundle(form: FormData) -> Bundle:
    parts: list[tuple[str, bytes]] = []
    for key, value in form.multi_items():
        if key in FILE_FIELDS and isinstance(value, UploadFile):
            parts.append((value.filename or "", await value.read()))
        elif key not in ("default",):
            raise invalid(f"Unknown field {key[:40]!r}.", key[:40])
    return normalise(parts)


def _default(form: FormData, allowed: bool) -> bool:
    raw = form.getlist("default")
    if not raw:
        return False
    if not allowed or len(raw) > 1 or raw[0] not in ("true", "false"):
        raise invalid("default must be true or false.", "default")
    return raw[0] == "true"
