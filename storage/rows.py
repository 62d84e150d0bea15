"""Row helpers shared by the repositories: JSON columns and the query protocol."""

from __future__ import annotations

import functools
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


def as_dict(row: sqlite3.Row) -> dict[str, Any]:
    """`dict(row)` in one pass over the columns (`dict(row)` finds each column by its
    name, a scan of the row's names per column). A row naming two columns alike (names
    are found regardless of case) is left to `dict(row)`, which gives each such name the
    first one's value."""
    names = tuple(row.keys())
    if not _distinct(names):
        return dict(row)
    return dict(zip(names, row, strict=True))


@functools.lru_cache(maxsize=512)
def _distinct(names: tuple[str, ...]) -> bool:
    """Whether no two of a row's column names are alike regardless of case."""
    return len({name.lower() for name in names}) == len(names)


def record(row: sqlite3.Row | None, json_columns: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """Turn a row into a dict, decoding the named JSON columns."""
    if row is None:
        return None
    data = as_dict(row)
    for column in json_columns:
        if column in data:
            data[column] = loads(data[column])
    return data


# Columns the database keeps itself (migration 21's and 24's triggers), per table: a
# copied or imported row leaves them to their defaults and its copied child rows rebuild
# them (a session's `journal_key` is its own, given when it is inserted).
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
            "journal_key",
        }
    ),
}
