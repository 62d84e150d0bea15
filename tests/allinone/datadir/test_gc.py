"""Archive, delete and `corebox gc` on a real server's data directory: the deleted
sessions' rows, blobs and workspace directories go, the data directory shrinks, archived
sessions stay readable and refuse new input, and a dry run changes nothing."""

from __future__ import annotations

import base64
import json
import os
import pty
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from allinone.core.gateway.workspace import wire_uuid
from allinone.datadir.bundle import default_project
from tests.api.support import database_state, http
from tests.conftest import API_KEY, ROOT, Server, start_server
from tests.support.sdk import sdk_client

SESSIONS = 40
ARCHIVED = 10
ARTIFACT_BYTES = 1 << 20
BETA = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path / "data")
    yield running
    running.stop()


def corebox(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(data_dir.parent),
        timeout=300,
        check=False,
    )


def managed_session(client: OpenAI, payload: bytes) -> str:
    data = base64.b64encode(payload).decode()
    environment = {
        "type": "openai_hosted",
        "files": [{"type": "inline", "data": data, "path": "/workspace/outputs/big.bin"}],
    }
    return hosted_session(client, environment, "done")


def hosted_session(client: OpenAI, environment: Any, text: str = "/write a.txt kept") -> str:
    """A session in `environment` whose first turn (`text`) completed."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment=environment, input=text, stream=True
        )
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    return str(events[0].session.id)  # type: ignore[attr-defined]


def rows_of(data_dir: Path, session_ids: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(session_ids))
    found = {}
    with closing(sqlite3.connect(f"file:{data_dir / 'corebox.db'}?mode=ro", uri=True)) as db:
        for table in ("sessions", "session_events", "items", "turns", "artifacts"):
            column = "id" if table == "sessions" else "session_id"
            sql = f"SELECT COUNT(*) FROM {table} WHERE {column} IN ({marks})"
            if table == "session_events":  # rows name their session by its journal key
                sql = (
                    "SELECT COUNT(*) FROM session_events WHERE session_key IN"
                    f" (SELECT journal_key FROM sessions WHERE id IN ({marks}))"
                )
            found[table] = db.execute(sql, session_ids).fetchone()[0]
    return found


def workspace_names(data_dir: Path) -> set[str]:
    root = data_dir / "workspaces"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def database_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob("corebox.db*"))


def blob_names(data_dir: Path) -> set[str]:
    return {p.name for p in (data_dir / "blobs").glob("*/*")}


def blob_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in (data_dir / "blobs").glob("*/*"))


def test_gc_purges_deleted_sessions_and_keeps_archived_ones(
    own_server: Server, request: pytest.FixtureRequest
) -> None:
    client = sdk_client(base_url=own_server.base_url + "/v1", api_key=API_KEY, max_retries=0)
    request.addfinalizer(client.close)
    data_dir = own_server.data_dir
    ids = [managed_session(client, os.urandom(ARTIFACT_BYTES)) for _ in range(SESSIONS)]
    archived, deleted = ids[:ARCHIVED], ids[ARCHIVED:]
    assert len(workspace_names(data_dir)) == SESSIONS
    assert len(blob_names(data_dir)) == SESSIONS  # every 1 MiB body is outside the database
    for session_id in archived:
        status, body, _ = http(
            own_server.base_url, "POST", f"/x/v1/sessions/{session_id}/archive", {}, BETA
        )
        assert status == 200 and body["archived"] is True, body
    for session_id in deleted:
        client.beta.agents.sessions.delete(session_id)

    kept = corebox(data_dir, "storage", "--json")  # the default retention keeps them
    assert kept.returncode == 0, kept.stderr
    report = corebox(data_dir, "storage", "--json", "--retention-days", "0")
    assert report.returncode == 0, report.stderr
    usage = json.loads(report.stdout)
    assert usage["categories"]["blobs"] >= SESSIONS * ARTIFACT_BYTES
    assert usage["categories"]["snapshots"] > 0  # each managed turn's end is snapshotted
    # Free pages count either way; the deleted sessions' bodies only past their retention.
    beyond = usage["reclaimable_bytes"] - json.loads(kept.stdout)["reclaimable_bytes"]
    assert beyond >= (SESSIONS - ARCHIVED) * ARTIFACT_BYTES

    before_state, before_dirs = database_state(data_dir), workspace_names(data_dir)
    before_blobs = blob_names(data_dir)
    dry = corebox(data_dir, "gc", "--dry-run", "--retention-days", "0")
    assert dry.returncode == 0, dry.stderr
    would = re.fullmatch(
        r"gc would remove (\d+ rows \(\d+ sessions\) and \d+ workspace and snapshot"
        r" directories and \d+ blobs); database [\d,]+ bytes\n",
        dry.stdout,
    )
    assert would, dry.stdout  # a dry run frees nothing, and says no figure for it
    assert database_state(data_dir) == before_state
    assert workspace_names(data_dir) == before_dirs
    assert blob_names(data_dir) == before_blobs

    size_before = database_bytes(data_dir)
    total_before = size_before + blob_bytes(data_dir)
    run = corebox(data_dir, "gc", "--retention-days", "0")
    assert run.returncode == 0, run.stderr
    gone = SESSIONS - ARCHIVED
    said = re.fullmatch(
        rf"gc removed \d+ rows \({gone} sessions\) and {2 * gone} workspace and snapshot"
        rf" directories and {gone} blobs; database ([\d,]+) -> ([\d,]+) bytes"
        r" \(([\d,]+) freed\)\n",
        run.stdout,
    )
    assert said, run.stdout  # sizes grouped in thousands, as `corebox storage` shows them
    assert f"gc removed {would.group(1)}; " in run.stdout  # what the dry run said would go
    before, after, freed = (int(n.replace(",", "")) for n in said.groups())
    assert before - after == freed and before > 1000
    assert rows_of(data_dir, deleted) == dict.fromkeys(rows_of(data_dir, deleted), 0)
    assert len(workspace_names(data_dir)) == ARCHIVED
    assert len(blob_names(data_dir)) == ARCHIVED
    # The bodies lived in the blob store: the data directory as a whole shrank by the 30
    # deleted artifacts, the database file by what their rows took.
    assert database_bytes(data_dir) < size_before
    assert total_before - database_bytes(data_dir) - blob_bytes(data_dir) >= 25 * ARTIFACT_BYTES

    for session_id in archived:
        session = client.beta.agents.sessions.retrieve(session_id)
        assert session.x_corebox["archived_at"] > 0  # type: ignore[attr-defined]
        artifact = client.beta.agents.sessions.artifacts.list(session_id).data[0]
        body = client.beta.agents.sessions.artifacts.content(artifact.id, session_id=session_id)
        assert len(body.read()) == ARTIFACT_BYTES
        assert len(client.beta.agents.sessions.items.list(session_id).data) == 2
    refused = _post_input(own_server, archived[0])
    assert refused[0] == 409 and refused[1]["error"]["code"] == "session_archived"
    restored = http(
        own_server.base_url, "POST", f"/x/v1/sessions/{archived[0]}/unarchive", {}, BETA
    )
    assert restored[0] == 200 and restored[1]["archived_at"] is None
    assert _post_input(own_server, archived[0])[0] == 202


def _post_input(server: Server, session_id: str) -> tuple[int, Any]:
    message = {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "more"}]}],
    }
    status, body, _ = http(
        server.base_url,
        "POST",
        f"/v1/agents/sessions/{session_id}/events",
        {"events": [message]},
        BETA,
    )
    return status, body


def test_gc_purges_a_deleted_agent_with_its_versions_and_pointers(own_server: Server) -> None:
    with OpenAI(base_url=f"{own_server.base_url}/v1", api_key=API_KEY, max_retries=0) as client:
        agent = client.beta.agents.create(model="scripted", name="versioned")
        client.beta.agents.update(agent.id, name="versioned again")
        kept = client.beta.agents.create(model="scripted", name="kept")
        client.beta.agents.delete(agent.id)
    result = corebox(own_server.data_dir, "gc", "--retention-days", "0")
    assert result.returncode == 0, result.stderr
    with closing(sqlite3.connect(own_server.data_dir / "corebox.db")) as conn:
        for table in ("agent_versions", "agent_deployments", "agent_audit", "agents"):
            rows = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE agent_id = ?"
                if table != "agents"
                else "SELECT COUNT(*) FROM agents WHERE id = ?",
                (agent.id,),
            ).fetchone()[0]
            assert rows == 0, table
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM agent_versions WHERE agent_id = ?", (kept.id,)
            ).fetchone()[0]
            == 1
        )


def _environment_status(server: Server, environment_id: str) -> int:
    return http(server.base_url, "GET", f"/v1/agents/environments/{environment_id}", None, BETA)[0]


def test_gc_keeps_environments_created_on_their_own_and_purges_those_sessions_made(
    own_server: Server, request: pytest.FixtureRequest
) -> None:
    client = sdk_client(base_url=own_server.base_url + "/v1", api_key=API_KEY, max_retries=0)
    request.addfinalizer(client.close)
    hosted = {"type": "openai_hosted"}
    used, unused, archived = (
        client.beta.agents.environments.create(environment=hosted).id  # type: ignore[arg-type]
        for _ in range(3)
    )
    on_used = hosted_session(client, {**hosted, "environment_id": used})
    on_archived = hosted_session(client, {**hosted, "environment_id": archived})
    implicit = hosted_session(client, hosted)
    made = client.beta.agents.sessions.retrieve(implicit).environment.id  # type: ignore[union-attr]
    # A fork copies the workspace into a new environment: the fork's own.
    status, fork, _ = http(own_server.base_url, "POST", f"/x/v1/sessions/{on_used}/fork", {}, BETA)
    assert status == 200, fork
    forked = fork["environment"]["id"]
    assert forked != used
    status, body, _ = http(
        own_server.base_url, "POST", f"/x/v1/environments/{archived}/archive", {}, BETA
    )
    assert status == 200 and body["archived"] is True, body
    for session_id in (on_used, on_archived, implicit, fork["id"]):
        client.beta.agents.sessions.delete(session_id)

    run = corebox(own_server.data_dir, "gc", "--retention-days", "0")
    assert run.returncode == 0, run.stderr
    assert "(4 sessions)" in run.stdout, run.stdout

    statuses = {e: _environment_status(own_server, e) for e in (used, unused, archived, made)}
    assert statuses | {forked: _environment_status(own_server, forked)} == {
        used: 200,
        unused: 200,
        archived: 200,
        made: 404,
        forked: 404,
    }
    assert workspace_names(own_server.data_dir) == {wire_uuid(e) for e in (used, unused, archived)}
    again = hosted_session(client, {**hosted, "environment_id": used})
    assert client.beta.agents.sessions.retrieve(again).environment.id == used  # type: ignore[union-attr]


def test_export_shows_progress_on_a_terminal_and_nothing_extra_through_a_pipe(
    own_server: Server, tmp_path: Path
) -> None:
    with OpenAI(base_url=f"{own_server.base_url}/v1", api_key=API_KEY, max_retries=0) as client:
        for n in range(3):
            list(
                client.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input=f"/say {n}",
                    stream=True,
                )
            )
    piped = corebox(own_server.data_dir, "export", "-o", str(tmp_path / "piped.bundle"))
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    project = default_project(own_server.data_dir)
    assert piped.stdout.splitlines() == [
        f"export {tmp_path / 'piped.bundle'}: "
        + f"{(tmp_path / 'piped.bundle').stat().st_size} bytes from project {project}"
    ]

    main, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    target = tmp_path / "shown.bundle"
    argv = [sys.executable, "-m", "allinone", "export", "-o", str(target)]
    argv += ["--data-dir", str(own_server.data_dir)]
    process = subprocess.Popen(argv, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other side closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.wait(timeout=60) == 0
    text = shown.decode()
    assert "\rexport " in text and "100%" in text, text  # the bar, redrawn in place
    assert f"export {target}: " in text  # then the same summary line
