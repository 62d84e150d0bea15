"""`/v1/files`: the Files API the SDK's `client.files` uses (upload, list, retrieve,
content, delete). An upload reads `file`, `purpose` and `expires_after` (an `anchor` of
`created_at` and 3,600-2,592,000 `seconds`) and refuses any other field. A file past its
`expires_at` is gone for every route (`storage.files`).
Bodies stream to and from disk through `allinone.core.file_bodies`; no body is ever
held in memory whole."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, BinaryIO

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.bodies import limited, read_body
from allinone.core.api.common import json, list_params, read_page
from allinone.core.api.decoding import upload_filename
from allinone.core.api.errors import invalid, not_found
from allinone.core.file_bodies import FileBodies
from allinone.core.ids import Clock, Ids
from allinone.core.numbers import whole_number
from allinone.core.render import page
from storage import files as file_rows
from storage.database import Database

MAX_UPLOAD_BYTES = 64 * 1024 * 1024
UPLOAD_CHUNK_BYTES = 256 * 1024
# The Files API's own list bounds: `limit` 1-10,000, default 10,000.
MAX_FILE_LIMIT = 10_000
PURPOSES = ("user_data",)
UPLOAD_FIELDS = ("file", "purpose", "expires_after[anchor]", "expires_after[seconds]")
# `expires_after.seconds`' bounds: an hour to thirty days.
EXPIRY_SECONDS = (3600, 30 * 24 * 3600)
# A delete has no body; this much is read to tell an empty one from one that is not.
MAX_DELETE_BODY_BYTES = 64 * 1024


def file_object(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "file",
        "bytes": row["bytes"],
        "created_at": row["created_at"],
        "filename": row["filename"],
        "purpose": row["purpose"],
        "status": "processed",
        "expires_at": row.get("expires_at"),
        "status_details": None,
    }


class FilesApi:
    def __init__(self, db: Database, bodies: FileBodies, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._bodies = bodies
        self._ids = ids
        self._clock = clock

    def routes(self) -> list[Route]:
        return [
            Route("/v1/files", self.upload, methods=["POST"]),
            Route("/v1/files", self.list, methods=["GET"]),
            Route("/v1/files/{file_id}", self.retrieve, methods=["GET"]),
            Route("/v1/files/{file_id}", self.delete, methods=["DELETE"]),
            Route("/v1/files/{file_id}/content", self.content, methods=["GET"]),
        ]

    async def upload(self, request: Request) -> Response:
        project = project_of(request)
        content_type = request.headers.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            raise invalid("Upload a file as multipart/form-data.")
        async with _upload_fields(request) as (filename, source, purpose, expires_after):
            size, sha256 = await asyncio.to_thread(_measure, source)
            now = self._clock.now()
            row = {
                "id": self._ids.new("file"),
                "project_id": project,
                "filename": filename,
                "purpose": purpose,
                "bytes": size,
                "sha256": sha256,
                "created_at": now,
                "expires_at": None if expires_after is None else now + expires_after,
            }
            await self._bodies.store(row, source)
        return json(file_object(row))

    async def list(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request, default=MAX_FILE_LIMIT, maximum=MAX_FILE_LIMIT)
        purpose = request.query_params.get("purpose") or None
        rows, more = await read_page(
            self._db,
            partial(
                file_rows.page,
                project_id=project,
                purpose=purpose,
                after=params.after,
                limit=params.limit,
                order=params.order,
                now=self._clock.now(),
            ),
            "after is not a valid file ID",
        )
        return json(page([file_object(row) for row in rows], more))

    async def _file(self, request: Request) -> dict[str, Any]:
        project = project_of(request)
        row = await self._db.read(
            partial(
                file_rows.get,
                project_id=project,
                file_id=request.path_params["file_id"],
                now=self._clock.now(),
            )
        )
        if row is None:
            raise not_found()
        return row

    async def retrieve(self, request: Request) -> Response:
        return json(file_object(await self._file(request)))

    async def content(self, request: Request) -> Response:
        row = await self._file(request)
        reader = await self._bodies.open(row["project_id"], row["id"])
        if reader is None:  # deleted since it was found
            raise not_found()
        return StreamingResponse(
            aiter(reader),
            media_type="application/octet-stream",
            headers={"content-length": str(row["bytes"])},
        )

    async def delete(self, request: Request) -> Response:
        if await read_body(request, MAX_DELETE_BODY_BYTES):
            raise invalid("A delete takes no request body.", code="unsupported_parameter")
        file_id = request.path_params["file_id"]
        if not await self._bodies.delete(project_of(request), file_id):
            raise not_found()
        return json({"id": file_id, "object": "file", "deleted": True})


@asynccontextmanager
async def _upload_fields(
    request: Request,
) -> AsyncIterator[tuple[str, BinaryIO, str, int | None]]:
    """The `file` (as a file positioned at its start), `purpose` and `expires_after`
    (its seconds, or None) fields of a multipart upload. The body streams through the
    size limit; the file part spools to a temporary file on disk as it arrives, removed
    when the block ends."""
    try:
        form = await limited(request, MAX_UPLOAD_BYTES).form(max_files=1, max_fields=8)
    except (MultiPartException, UnicodeDecodeError) as exc:
        raise invalid("The multipart body could not be read.") from exc
    try:
        _check_field_names([name for name, _ in form.multi_items()])
        purpose = form.get("purpose")
        if purpose not in PURPOSES:
            raise invalid("purpose must be user_data.", "purpose")
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise invalid("A file is required.", "file")
        expires_after = _expires_after(
            form.get("expires_after[anchor]"), form.get("expires_after[seconds]")
        )
        yield upload_filename(upload.filename), upload.file, str(purpose), expires_after
    finally:
        await form.close()


def _check_field_names(names: list[str]) -> None:
    """Only `file`, `purpose` and `expires_after`'s two fields (as the SDK sends a
    nested object in a multipart body) are read, each once; any other field is not part
    of the upload."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise invalid(
                f"The upload repeats the field {name[:64]!r}.",
                name[:64],
                code="unsupported_parameter",
            )
        seen.add(name)
        if name not in UPLOAD_FIELDS:
            raise invalid(f"Unknown upload field {name[:64]!r}.", name[:64])


def _expires_after(anchor: object, seconds: object) -> int | None:
    """`expires_after`'s seconds, None when the upload has none; both of its fields are
    required, the anchor is `created_at` and the seconds are within `EXPIRY_SECONDS`."""
    if anchor is None and seconds is None:
        return None
    if anchor != "created_at":
        raise invalid("expires_after.anchor must be created_at.", "expires_after.anchor")
    low, high = EXPIRY_SECONDS
    number = whole_number(seconds if isinstance(seconds, str) else "", low, high)
    if number is None:
        raise invalid(
            f"expires_after.seconds must be an integer from {low} to {high}.",
            "expires_after.seconds",
        )
    return number


def _measure(source: BinaryIO) -> tuple[int, str]:
    """Size and SHA-256 of `source`, read in chunks; leaves it at its start."""
    digest = hashlib.sha256()
    size = 0
    source.seek(0)
    while chunk := source.read(UPLOAD_CHUNK_BYTES):
        digest.update(chunk)
        size += len(chunk)
    source.seek(0)
    return size, digest.hexdigest()
