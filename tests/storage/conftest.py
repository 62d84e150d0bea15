"""The storage suite runs on both backends: a test that takes `target` runs once on an
SQLite file in its temporary directory and once on a fresh PostgreSQL database on the
throw-away server (tests/support/postgres.py). Tests of what only SQLite has (its files,
WAL, file faults) take `tmp_path` alone and say so in their docstring."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from storage.database import Tx
from tests.support.databases import Raw, raw
from tests.support.postgres import Cluster

__all__ = ["Raw", "Target", "add_sessions", "raw"]

Target = Callable[[str], "Path | str"]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Target:
    """`target(name)`: what `Database.open` takes for the database called `name` in this
    test (the same name gives the same database)."""
    if backend == "sqlite":
        return lambda name: tmp_path / name
    cluster: Cluster = request.getfixturevalue("postgres_cluster")
    urls: dict[str, str] = {}

    def url(name: str) -> str:
        if name not in urls:
            urls[name] = cluster.fresh_database()
        return urls[name]

    return url


async def add_sessions(tx: Tx, *session_ids: str) -> None:
    """Project `p` and in it a bare `scripted` session of agent `a` for each id."""
    await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
    for session_id in session_ids:
        await tx.execute(
            "INSERT INTO sessions (id, project_id, agent_id, harness, created_at,"
            " last_active_at, agent, environment, metadata, vault_ids)"
            " VALUES (?, 'p', 'a', 'scripted', 0, 0, '{}', '{}', '{}', '[]')",
            (session_id,),
        )
