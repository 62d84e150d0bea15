"""What every `/v1` handler shares: the Beta header, bearer auth, body decoding and
list parameters."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from allinone.core.api.bodies import read_body
from allinone.core.api.decoding import decode_json
from allinone.core.api.errors import invalid, not_found
from allinone.core.errors import InvalidRequest, Refused
from allinone.core.numbers import whole_number
from storage.database import Database, Reader
from storage.pages import CursorNotFound, keyset

T = TypeVar("T")

BETA_VALUE = "agents=v1"
MAX_BODY_BYTES = 1024 * 1024


def check_beta(request: Request) -> None:
    values = request.headers.getlist("openai-beta")
    if len(values) != 1 or values[0].strip() != BETA_VALUE:
        raise InvalidRequest(
            "To access the Agents API, set the 'OpenAI-Beta' header to 'agents=v1'.",
            code="invalid_beta",
        )


async def decode_body(request: Request, type_: type[T], limit: int = MAX_BODY_BYTES) -> T:
    """Read the body (at most `limit` bytes, refused while it streams in) and decode it
    with `decoding.decode_json`."""
    return decode_json(await read_body(request, limit), type_)


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is None or key == "":
        return None
    if len(key.encode()) > 128 or not key.strip():
        raise invalid("Idempotency-Key must be 1-128 bytes and not blank.", code="invalid_request")
    return key


class ListParams(msgspec.Struct):
    after: str | None
    limit: int
    order: str


MAX_LIST_LIMIT = 100


def list_limit(raw: str | None, default: int = 20, maximum: int = MAX_LIST_LIMIT) -> int:
    """A list's `limit`: 1 to `maximum` (100 unless the route's contract says otherwise),
    default 20; anything else is a 400, as the hosted service answers (never silently
    clamped)."""
    if raw is None:
        return default
    limit = whole_number(raw, 0, 2**64 - 1)  # what the deserializer's unsigned integer holds
    if limit is None:
        raise invalid(
            "Failed to deserialize query string: limit: invalid digit found in string", "limit"
        )
    if not 1 <= limit <= maximum:
        raise invalid(f"limit must be between 1 and {maximum}", "limit")
    return limit


def list_params(request: Request, default: int = 20, maximum: int = MAX_LIST_LIMIT) -> ListParams:
    query = request.query_params
    for name in ("after", "limit", "order"):
        if len(query.getlist(name)) > 1:
            raise invalid(f"Failed to deserialize query string: duplicate field `{name}`.", name)
    limit = list_limit(query.get("limit"), default, maximum)
    order = list_order(query.get("order"))
    return ListParams(after=list_after(query.get("after")), limit=limit, order=order)


def list_after(raw: str | None) -> str | None:
    """A list's cursor, trimmed; empty is none."""
    return (raw or "").strip() or None


def list_order(raw: str | None) -> str:
    """A list's `order`: `asc` or `desc`, default `desc`; anything else, an explicit empty
    value included, is a 400 (the official SDK never sends an empty one)."""
    if raw is None:
        return "desc"
    if raw not in ("asc", "desc"):
        raise invalid(
            f"Failed to deserialize query string: order: unknown variant `{raw[:20]}`"
            ", expected `asc` or `desc`",
            "order",
        )
    return raw


_FLAGS = {"true": True, "false": False, "1": True, "0": False}


def query_flag(request: Request, name: str, *, default: bool) -> bool:
    """A boolean query parameter: `true` or `false` (`1` and `0` too); absent, `default`."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw not in _FLAGS:
        raise invalid(f"{name} must be true or false.", name)
    return _FLAGS[raw]


async def keyset_page(
    db: Database,
    params: ListParams,
    *,
    table: str,
    where: str,
    args: tuple[Any, ...],
    keys: tuple[str, str] = ("created_at", "id"),
    cursor_message: str | None = None,
) -> tuple[list[sqlite3.Row], bool]:
    """One keyset page of `table`; an unknown cursor is a 404, or a 400 with
    `cursor_message` where the route's contract says so."""
    return await read_page(
        db,
        partial(
            keyset,
            table=table,
            where=where,
            params=args,
            after=params.after,
            limit=params.limit,
            order=params.order,
            keys=keys,
        ),
        cursor_message,
    )


async def read_page(
    db: Database,
    reader: Callable[[Reader], Awaitable[T]],
    cursor_message: str | None = None,
) -> T:
    """Run a page read; an `after` cursor that names no row of the list becomes the
    route's error (404, or a 400 with `cursor_message`)."""
    try:
        return await db.read(reader)
    except CursorNotFound as exc:
        raise cursor_error(exc, cursor_message) from exc


def cursor_error(exc: CursorNotFound, message: str | None = None) -> Refused:
    if message is None:
        return not_found()
    return invalid(message, "after")


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return msgspec.json.encode(content)


def json(body: Any, status: int = 200) -> Response:
    return JsonResponse(body, status_code=status)
