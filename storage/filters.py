"""WHERE fragments for list filters, built from fixed SQL and bound parameters only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def where(*parts: tuple[str, tuple[Any, ...]]) -> tuple[str, tuple[Any, ...]]:
    """Join (sql, params) fragments with AND; empty fragments are skipped."""
    sql = [part for part, _ in parts if part]
    params: list[Any] = []
    for part, values in parts:
        if part:
            params.extend(values)
    return " AND ".join(sql) or "1 = 1", tuple(params)


def metadata_matches(column: str, pairs: Mapping[str, str]) -> tuple[str, tuple[Any, ...]]:
    """Every pair must be present in the JSON object stored in `column` (a fixed name)."""
    clauses = []
    params: list[Any] = []
    for key, value in sorted(pairs.items()):
        clauses.append(
            f"EXISTS (SELECT 1 FROM json_each({column}) m WHERE m.key = ? AND m.value = ?)"
        )
        params.extend([key, value])
    return " AND ".join(clauses), tuple(params)


def one_of(column: str, values: Iterable[str]) -> tuple[str, tuple[Any, ...]]:
    """`column` is one of `values`; no values means no restriction."""
    chosen = sorted(set(values))
    if not chosen:
        return "", ()
    return f"{column} IN ({', '.join('?' for _ in chosen)})", tuple(chosen)
