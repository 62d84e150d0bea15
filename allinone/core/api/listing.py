"""List envelopes and list filters shared by the resource routes.

Query encoding follows the official SDK: a map is sent as `metadata[key]=value`, an
array as `status[]=a&status[]=b` (a single value as `status=a`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request

from allinone.core.api.errors import invalid

_METADATA_KEY = re.compile(r"^metadata\[(.*)\]$")
MAX_FILTER_PAIRS = 16


def page(data: Sequence[Any], has_more: bool) -> dict[str, Any]:
    """`{object: "list", data, first_id, last_id, has_more}`; items are Structs with `id`."""
    return {
        "object": "list",
        "data": list(data),
        "first_id": data[0].id if data else None,
        "last_id": data[-1].id if data else None,
        "has_more": has_more,
    }


def metadata_filter(request: Request) -> dict[str, str]:
    """Every `metadata[k]=v` pair of the query; all must match."""
    pairs: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        match = _METADATA_KEY.match(name)
        if match is None:
            continue
        key = match.group(1)
        if key in pairs:
            raise invalid(f"Failed to deserialize query string: duplicate field `{name}`.", name)
        if not 1 <= len(key) <= 64 or len(value) > 512:
            raise invalid(
                "Metadata filter keys must be 1-64 characters and values at most 512.", name
            )
        pairs[key] = value
    if len(pairs) > MAX_FILTER_PAIRS:
        raise invalid(f"At most {MAX_FILTER_PAIRS} metadata filters are allowed.", "metadata")
    return pairs


def status_filter(request: Request, allowed: tuple[str, ...]) -> list[str]:
    """`status=a` or `status[]=a&status[]=b`; empty means every status."""
    query = request.query_params
    values = [*query.getlist("status"), *query.getlist("status[]")]
    for value in values:
        if value not in allowed:
            raise invalid(
                f"status must be one of {', '.join(allowed)}, not {value[:40]!r}.", "status"
            )
    return values


def single(request: Request, name: str) -> str | None:
    """An optional scalar query parameter; repeating it is an error."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise invalid(f"Failed to deserialize query string: duplicate field `{name}`.", name)
    return values[0] if values and values[0] != "" else None
