"""`corebox migrate-to-postgres`: an embedded installation, made by a real `corebox serve`
on SQLite, is copied into an empty PostgreSQL database; a server started on that
database with the same data directory serves the same sessions, items, usage and file
bodies and goes on numbering where the copy ended. A target with data is refused."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from openai import OpenAI

from tests.conftest import API_KEY, ROOT, Server, start_server
from tests.storage.conftest import raw

BODY = bytes(range(256)) * 64


def _client(server: Server) -> OpenAI:
    return OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )


def _migrate(data: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allinone", "migrate-to-postgres", "--from", str(data), "--to", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _state(client: OpenAI, session_id: str, file_id: str) -> tuple[object, ...]:
    session = client.beta.agents.sessions.retrieve(session_id)
    items = [item.id for item in client.beta.agents.sessions.items.list(session_id)]
    turns = [(t.id, t.status) for t in client.beta.agents.sessions.turns.list(session_id)]
    body = client.files.content(file_id).read()
    return session.status, session.usage, items, turns, body


def test_an_installation_moves_to_postgresql_whole(tmp_path: Path, postgres_url: str) -> None:
    data = tmp_path / "data"
    server = start_server(data, extra_env={"COREBOX_DATABASE_URL": ""})
    try:
        with _client(server) as client:
            events = list(
                client.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input="/say moved\n/usage 3 4",
                    stream=True,
                )
            )
            session_id = events[0].session.id  # type: ignore[attr-defined]
            file_id = client.files.create(file=("a.bin", io.BytesIO(BODY)), purpose="user_data").id
            before = _state(client, session_id, file_id)
    finally:
        server.stop()

    done = _migrate(data, postgres_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("copied ") and "tables" in lines[0]
    assert "@" not in lines[0] or ":" not in lines[0].split("@")[0].split("//")[1]

    moved = start_server(data, extra_env={"COREBOX_DATABASE_URL": postgres_url})
    try:
        with _client(moved) as client:
            assert _state(client, session_id, file_id) == before
            with client.beta.agents.sessions.events.stream(session_id) as stream:
                client.beta.agents.sessions.events.create(  # numbering goes on
                    session_id,
                    events=[
                        {
                            "type": "agent.session.input.message",
                            "input": [
                                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
                            ],
                        }
                    ],
                )
                for event in stream:  # until the new turn ran (it was claimed)
                    if event.type == "agent.session.turn.completed":
                        break
            turns = client.beta.agents.sessions.turns.list(session_id).data
            assert len(turns) == len(before[3]) + 1
    finally:
        moved.stop()
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT COUNT(*) AS n FROM turns")[0]["n"] >= 1
        # Fencing tokens went on from the copied counter: the new turn's is the largest.
        tokens = conn.execute(
            "SELECT CAST(fencing_token AS BIGINT) AS t FROM turns WHERE fencing_token IS NOT NULL"
            " ORDER BY created_at, id"
        )
        assert len(tokens) >= 2
        assert tokens[-1]["t"] > max(row["t"] for row in tokens[:-1])

    refused = _migrate(data, postgres_url)
    assert refused.returncode == 1
    assert "not empty" in refused.stderr


def test_a_served_installation_is_refused(tmp_path: Path) -> None:
    """What the server acknowledged after the copy would be left behind: its database is
    refused while it is served, before anything is read or any server is reached."""
    data = tmp_path / "data"
    server = start_server(data, extra_env={"COREBOX_DATABASE_URL": ""})
    try:
        refused = _migrate(data, "postgresql://nobody@127.0.0.1:1/nothing")
    finally:
        server.stop()
    assert refused.returncode == 1 and refused.stdout == ""
    assert "is served by another corebox" in refused.stderr, refused.stderr
