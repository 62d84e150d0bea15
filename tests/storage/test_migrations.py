"""Tier 3: a new SQLite database starts from the schema snapshot beside the numbered
migrations, and ends exactly as the files alone would make it (real database files)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from storage import migrations


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _picture(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything a database holds but its pages: every schema object with its text, every
    table's rows, and the versions recorded (not when)."""
    schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    tables = [name for kind, name, _, _ in schema if kind == "table" and name != "schema_version"]
    return {
        "schema": sorted(schema, key=repr),
        "rows": {t: sorted(conn.execute(f'SELECT * FROM "{t}"'), key=repr) for t in tables},
        "versions": [v for (v,) in conn.execute("SELECT version FROM schema_version ORDER BY 1")],
    }


def test_the_snapshot_beside_the_files_is_what_they_make() -> None:
    assert migrations.SNAPSHOT.read_text(encoding="utf-8") == migrations.snapshot(), (
        "storage/migrations/schema.sql is out of date with the numbered files: run `make schema`"
    )


def test_a_new_database_from_the_snapshot_is_the_one_the_files_make(tmp_path: Path) -> None:
    newest = migrations.available()[-1][0]
    with closing(_open(tmp_path / "files.db")) as by_files:
        # A snapshot at version 0 stands for no file, so every file runs.
        assert migrations.apply(by_files, migrations.snapshot(0)) == newest
        expected = _picture(by_files)
    with closing(_open(tmp_path / "snapshot.db")) as by_snapshot:
        assert migrations.apply(by_snapshot) == newest
        assert _picture(by_snapshot) == expected
        assert by_snapshot.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert expected["versions"] == [number for number, _ in migrations.available()]
    assert len(expected["schema"]) > 100  # the comparison is of a whole schema


def test_a_snapshot_older_than_the_files_is_followed_by_the_files_above_it(
    tmp_path: Path,
) -> None:
    numbers = [number for number, _ in migrations.available()]
    older = migrations.snapshot(numbers[-3])
    assert older.startswith(f"-- corebox schema at version {numbers[-3]}:")
    with closing(_open(tmp_path / "files.db")) as by_files:
        migrations.apply(by_files, migrations.snapshot(0))
        expected = _picture(by_files)
    with closing(_open(tmp_path / "older.db")) as by_older:
        assert migrations.apply(by_older, older) == numbers[-1]
        assert _picture(by_older) == expected


def test_a_database_with_a_version_recorded_migrates_from_the_files(tmp_path: Path) -> None:
    numbers = [number for number, _ in migrations.available()]
    with closing(_open(tmp_path / "files.db")) as by_files:
        migrations.apply(by_files, migrations.snapshot(0))
        expected = _picture(by_files)
    with closing(_open(tmp_path / "older.db")) as conn:
        # A database an earlier build made, one version behind.
        conn.execute(
            "CREATE TABLE schema_version ("
            " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        conn.executescript(migrations.snapshot(numbers[-2]))
        conn.executemany("INSERT INTO schema_version VALUES (?, 0)", [(n,) for n in numbers[:-1]])
        # A snapshot that would fail if it were run: the database is no longer new.
        broken = f"-- corebox schema at version {numbers[-1]}: x\nCREATE TABLE projects (id);\n"
        assert migrations.apply(conn, broken) == numbers[-1]
        assert _picture(conn) == expected


def test_a_snapshot_that_fails_leaves_the_new_database_empty(tmp_path: Path) -> None:
    good = migrations.snapshot()
    broken = good + "\nCREATE TABLE projects (id);\n"  # a table the snapshot already made
    with closing(_open(tmp_path / "a.db")) as conn:
        with pytest.raises(sqlite3.OperationalError, match="already exists"):
            migrations.apply(conn, broken)
        left = conn.execute("SELECT name FROM sqlite_master ORDER BY 1").fetchall()
        assert left == [("schema_version",)]
        assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0
        # And the next start creates it whole.
        assert migrations.apply(conn, good) == migrations.available()[-1][0]


def test_a_snapshot_without_its_version_line_is_refused(tmp_path: Path) -> None:
    with closing(_open(tmp_path / "a.db")) as conn, pytest.raises(ValueError, match="version line"):
        migrations.apply(conn, "CREATE TABLE projects (id);\n")


def test_a_snapshot_cut_short_is_refused(tmp_path: Path) -> None:
    cut = migrations.snapshot()[:-40]
    with closing(_open(tmp_path / "a.db")) as conn:
        with pytest.raises(sqlite3.OperationalError, match="incomplete input"):
            migrations.apply(conn, cut)
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 1


def test_environments_made_through_their_own_api_become_the_projects(tmp_path: Path) -> None:
    """Schema 36 tells an existing environment made by `environments.create` (the only
    one with a request hash) from one a session made for itself."""
    with closing(_open(tmp_path / "older.db")) as conn:
        conn.execute(
            "CREATE TABLE schema_version ("
            " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        conn.executescript(migrations.snapshot(35))
        numbers = [number for number, _ in migrations.available() if number <= 35]
        conn.executemany("INSERT INTO schema_version VALUES (?, 0)", [(n,) for n in numbers])
        conn.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
        for environment_id, request_hash in (("env_made", "sha"), ("env_inline", None)):
            conn.execute(
                "INSERT INTO environments (id, project_id, wire_id, type, status, config,"
                " created_at, request_hash) VALUES (?, 'p', ?, 'openai_hosted', 'ready', '{}',"
                " 0, ?)",
                (environment_id, environment_id, request_hash),
            )
        assert migrations.apply(conn) >= 36
        owners = dict(conn.execute("SELECT id, owner FROM environments"))
    assert owners == {"env_made": "project", "env_inline": "session"}
