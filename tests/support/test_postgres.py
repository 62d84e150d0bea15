"""The throw-away PostgreSQL cluster: each test gets a database of its own, empty,
running with fsync on."""

from __future__ import annotations

import psycopg

from tests.support.postgres import Cluster


def test_each_url_names_a_fresh_empty_database_with_fsync_on(
    postgres_cluster: Cluster, postgres_url: str
) -> None:
    other = postgres_cluster.fresh_database()
    assert other != postgres_url
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE marker (id INTEGER PRIMARY KEY)")
        conn.commit()
        fsync = conn.execute("SHOW fsync").fetchone()
        assert fsync is not None and fsync[0] == "on"
    with psycopg.connect(other) as conn:
        found = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'marker'"
        ).fetchone()
        assert found is not None and found[0] == 0
