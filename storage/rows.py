"""Row helpers shared by the repositories: JSON columns and the query protocol."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

_encoder = msgspec.json.Encoder()


class Queryable(Protocol):
    @property
    def backend(self) -> str: ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None: ...

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]: ...


def dumps(value: Any) -> str:
    return _encoder.encode(value).decode()


def loads(text: str | None) -> Any:
    return None if text is None else msgspec.json.decode(text)


def record(row: sqlite3.Row | None, json_columns: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """Turn a row into a dict, decoding the named JSON columns."""
    if row is None:
        return None
    data = dict(row)
    for column in json_columns:
        if column in data:
            data[column] = loads(data[column])
    return data


# Columns the database keeps itself (migration 21's triggers), per table: a copied or
# imported row leaves them to their defaults and its copied child rows rebuild them.
DERIVED: dict[str, frozenset[str]] = {
    "sessions": frozenset(
        {
            "usage_turns",
            "usage_unmeasured",
            "usage_input",
            "usage_cached",
            "usage_output",
            "usage_reasoning",
            "usage_total",
        }
    ),
}
