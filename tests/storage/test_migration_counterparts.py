"""Every SQLite migration has its PostgreSQL counterpart: the baseline stands for every
SQLite migration up to its number, and each later one needs a PostgreSQL file of the
same number, so that both backends always reach the same schema version."""

from __future__ import annotations

from storage import migrations

BASELINE = 23


def test_every_sqlite_migration_has_a_postgresql_counterpart() -> None:
    sqlite = [version for version, _ in migrations.available("sqlite")]
    postgresql = [version for version, _ in migrations.available("postgresql")]
    assert postgresql[0] == BASELINE
    assert max(sqlite) == max(postgresql)
    missing = [v for v in sqlite if v > BASELINE and v not in postgresql]
    assert not missing, (
        "add storage/migrations/postgres/NNNN_name.sql for the SQLite migrations"
        f" {missing} (the same change in PostgreSQL's dialect)"
    )
    orphans = [v for v in postgresql if v not in sqlite]
    assert not orphans, f"PostgreSQL migrations {orphans} have no SQLite migration"
