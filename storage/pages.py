"""Keyset pagination on (created_at, id), or on a per-parent position column."""

from __future__ import annotations

import sqlite3
from typing import Any

from storage.rows import Queryable


class CursorNotFound(LookupError):
    """The `after` cursor does not name a row of this list."""


async def keyset(
    q: Queryable,
    *,
    table: str,
    where: str,
    params: tuple[Any, ...],
    after: str | None,
    limit: int,
    order: str,
    keys: tuple[str, str] = ("created_at", "id"),
) -> tuple[list[sqlite3.Row], bool]:
    """Return up to `limit` rows after the cursor row, and whether more follow.

    `where` and `table` are fixed SQL fragments chosen by the caller, never user input.
    """
    direction = "ASC" if order == "asc" else "DESC"
    comparison = ">" if order == "asc" else "<"
    first, second = keys
    clauses = [where]
    args: list[Any] = list(params)
    if after is not None:
        anchor = await q.fetchone(
            f"SELECT {first}, {second} FROM {table} WHERE {where} AND id = ?", (*params, after)
        )
        if anchor is None:
            raise CursorNotFound(after)
        clauses.append(f"({first}, {second}) {comparison} (?, ?)")
        args.extend([anchor[first], anchor[second]])
    rows = await q.fetchall(
        f"SELECT * FROM {table} WHERE {' AND '.join(clauses)}"
        f" ORDER BY {first} {direction}, {second} {direction} LIMIT ?",
        (*args, limit + 1),
    )
    return rows[:limit], len(rows) > limit
