"""`rows.as_dict` gives exactly what `dict(row)` gives, for SQLite rows and for the
PostgreSQL driver's rows: every column in order, and the first of two columns that share
a name."""

from __future__ import annotations

import sqlite3

from storage import postgres
from storage.rows import as_dict, record


def test_as_dict_matches_dict_of_a_sqlite_row() -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    try:
        for sql in (
            "SELECT 1 AS a, 'x' AS b, NULL AS c, 2.5 AS D",
            "SELECT 1 AS a, 2 AS b, 3 AS a",
            "SELECT 1 AS a, 2 AS A",
        ):
            row = conn.execute(sql).fetchone()
            assert as_dict(row) == dict(row)
            assert list(as_dict(row).items()) == list(dict(row).items())
        row = conn.execute("""SELECT '{"k": [1]}' AS body, 7 AS n""").fetchone()
        assert record(row, ("body",)) == {"body": {"k": [1]}, "n": 7}
    finally:
        conn.close()


def test_as_dict_matches_dict_of_a_postgres_row() -> None:
    for names, values in ((("a", "b"), (1, "x")), (("a", "b", "a"), (1, 2, 3))):
        index = {name: n for n, name in enumerate(names)}
        row = postgres.Row(values, names, index)
        assert list(as_dict(row).items()) == list(dict(row).items())  # type: ignore[arg-type]
