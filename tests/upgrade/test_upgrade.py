"""Every earlier schema version's data directory is opened, migrated and served by this
build: items, turns and artifacts as the old build served them, and the old sessions
take new turns. The fixtures were written by the old builds themselves
(`make_fixtures.py`); schema 4 never shipped in a build that ran."""

from __future__ import annotations

import json
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path

import pytest

from storage import migrations
from tests.conftest import Server, start_server
from tests.support.sdk import sdk_client
from tests.upgrade.make_fixtures import KEY, picture

FIXTURES = Path(__file__).with_name("fixtures")
NAMES = sorted(p.name.removesuffix(".tar.gz") for p in FIXTURES.glob("schema_*.tar.gz"))


def test_a_fixture_exists_for_every_schema_version_that_shipped() -> None:
    versions = {int(name.removeprefix("schema_")) for name in NAMES}
    assert versions == {1, 6, 7, 8, 9, 11}
    assert max(versions) < migrations.available()[-1][0]


@pytest.mark.parametrize("name", NAMES)
def test_an_earlier_data_directory_is_migrated_and_served(name: str, tmp_path: Path) -> None:
    expected = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    data_dir = tmp_path / "data"
    with tarfile.open(FIXTURES / f"{name}.tar.gz") as tar:
        tar.extractall(data_dir, filter="data")
    server = start_server(data_dir, api_key=KEY)
    try:
        _check(server, expected)
    finally:
        server.stop()
    with closing(sqlite3.connect(data_dir / "corebox.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        newest = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    assert newest == migrations.available()[-1][0]


def _check(server: Server, expected: dict[str, object]) -> None:
    sessions = expected["sessions"]
    assert isinstance(sessions, dict)
    assert picture(server.port, list(sessions)) == sessions
    session_id = next(iter(sessions))
    client = sdk_client(base_url=server.base_url + "/v1", api_key=KEY, max_retries=0)
    with client, client.beta.agents.sessions.stream(session_id, input="/say again") as stream:
        assert stream.get_final_result().turn.status == "completed"
    now = picture(server.port, [session_id])[session_id]
    assert now["items"][-1] == ["message", "assistant", ["again"]]
