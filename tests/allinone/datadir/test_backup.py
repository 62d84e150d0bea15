"""`corebox backup` under load and `corebox restore` into a new directory: every input
acknowledged before the backup began is served by the restored server."""

from __future__ import annotations

import sqlite3
import tarfile
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from openai import OpenAI

from tests.allinone.datadir.test_gc import BETA, corebox
from tests.api.support import http
from tests.conftest import API_KEY, Server, start_server
from tests.support.sdk import sdk_client

SESSIONS = 4


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path / "data")
    yield running
    running.stop()


def _message(text: str) -> dict[str, object]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


class Load:
    """Threads that keep posting inputs; `acknowledged` holds each 202's text."""

    def __init__(self, server: Server, session_ids: list[str]) -> None:
        self.acknowledged: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.under_way = threading.Event()  # set once 20 inputs were acknowledged
        self._threads = [
            threading.Thread(target=self._post, args=(server, sid), daemon=True)
            for sid in session_ids
        ]

    def _post(self, server: Server, session_id: str) -> None:
        index = 0
        while not self._stop.is_set():
            text = f"{session_id} input {index}"
            path = f"/v1/agents/sessions/{session_id}/events"
            status, _, _ = http(server.base_url, "POST", path, {"events": [_message(text)]}, BETA)
            if status == 202:
                with self._lock:
                    self.acknowledged.append((session_id, text))
                    if len(self.acknowledged) >= 20:
                        self.under_way.set()
            index += 1

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def snapshot(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.acknowledged)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def _session(client: OpenAI) -> str:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="start", stream=True
        )
    )
    return str(events[0].session.id)  # type: ignore[attr-defined]


def test_a_backup_under_load_restores_every_acknowledged_input(
    own_server: Server, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    client = sdk_client(base_url=own_server.base_url + "/v1", api_key=API_KEY, max_retries=0)
    request.addfinalizer(client.close)
    ids = [_session(client) for _ in range(SESSIONS)]
    load = Load(own_server, ids)
    load.start()
    try:
        assert load.under_way.wait(timeout=60)  # each 202 is a real commit
        before = load.snapshot()
        target = tmp_path / "corebox.backup"
        taken = corebox(own_server.data_dir, "backup", str(target))
        assert taken.returncode == 0, taken.stderr
        assert len(taken.stdout.splitlines()) == 1
    finally:
        load.stop()
    with tarfile.open(target) as tar:
        names = tar.getnames()
        modes = {member.name: member.mode for member in tar.getmembers()}
    assert {"manifest.json", "corebox.db", "secrets/core.key"} <= set(names)
    assert set(modes.values()) == {0o600}, modes  # unpacked anywhere, still private

    restored = tmp_path / "restored" / "data"
    restored.parent.mkdir()
    put = corebox(restored, "restore", str(target))
    assert put.returncode == 0, put.stderr
    with closing(sqlite3.connect(restored / "corebox.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    again = corebox(restored, "restore", str(target))
    assert again.returncode == 1 and "already holds a database" in again.stderr

    second = start_server(restored)
    try:
        copy = sdk_client(base_url=second.base_url + "/v1", api_key=API_KEY, max_retries=0)
        request.addfinalizer(copy.close)
        for session_id in ids:
            items = copy.beta.agents.sessions.items.list(session_id, limit=100, order="asc")
            texts = {
                part.text
                for item in items  # every page
                if getattr(item, "role", None) == "user"
                for part in item.content  # type: ignore[union-attr]
            }
            wanted = {text for sid, text in before if sid == session_id}
            assert wanted <= texts, sorted(wanted - texts)
    finally:
        second.stop()


def test_a_restored_directory_keeps_the_default_projects_key_file(tmp_path: Path) -> None:
    """The commands that act for a project read the key the first start wrote: a restore
    brings it back, as private as it was."""
    data = tmp_path / "data"
    start_server(data, api_key=None).stop()
    key = (data / "default-project.key").read_text()
    target = tmp_path / "corebox.backup"
    assert corebox(data, "backup", str(target)).returncode == 0
    restored = tmp_path / "restored"
    put = corebox(restored, "restore", str(target))
    assert put.returncode == 0, put.stderr
    kept = restored / "default-project.key"
    assert kept.read_text() == key and kept.stat().st_mode & 0o777 == 0o600
