"""`environments.files.create` replaces a regular file at its path, as the official SDK
says ("replacing an existing regular file at the same path"), and nothing else: a
directory, a symlink or any other kind of file there is refused and left as it is."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.support import databases


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _rows(server: Any, environment_id: str, path: str) -> list[tuple[str, str, str | None]]:
    with databases.raw(databases.location(server.data_dir)) as db:
        rows = db.execute(
            "SELECT sha256, state, prior FROM environment_files"
            " WHERE environment_id = ? AND path = ? ORDER BY created_at, id",
            (environment_id, path),
        )
    return [(str(r["sha256"]), str(r["state"]), r["prior"]) for r in rows]


def _turn(client: OpenAI, environment: dict[str, Any], text: str) -> tuple[str, str]:
    """Run one scripted turn; (its streamed text, its environment's id)."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment=environment, input=text, stream=True
        )
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    text = "".join(getattr(e, "delta", "") or "" for e in events)
    return text, str(events[0].session.environment.id)


def test_a_write_replaces_a_regular_file_and_nothing_else(client: OpenAI, server: Any) -> None:
    files = client.beta.agents.environments.files
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    path = "/workspace/data/notes.txt"
    assert files.create(environment.id, type="inline", path=path, data=_b64(b"old")).size_bytes == 3
    new = b"the new, longer notes"
    replaced = files.create(environment.id, type="inline", path=path, data=_b64(new))
    assert (replaced.path, replaced.size_bytes) == (path, len(new))
    assert [(f.path, f.size_bytes) for f in files.list(environment.id)] == [(path, len(new))]
    shown = client.beta.agents.environments.retrieve(environment.id).files
    assert [(f.path, f.size_bytes) for f in shown] == [(path, len(new))]
    # Recorded before the transfer began: the bytes it replaced.
    old, latest = hashlib.sha256(b"old").hexdigest(), hashlib.sha256(new).hexdigest()
    assert _rows(server, environment.id, path) == [(latest, "written", old)]
    hosted = {"type": "openai_hosted", "environment_id": environment.id}
    said, _ = _turn(client, hosted, "/read data/notes.txt\n/say {read}")
    assert "the new, longer notes" in said
    workspace = server.data_dir / WORKSPACES_DIR / wire_uuid(environment.id)
    assert sorted(p.name for p in (workspace / "data").iterdir()) == ["notes.txt"]
    # Anything but a regular file at the path is refused as before, and left as it is.
    (workspace / "folder.txt").mkdir()
    (workspace / "folder.txt" / "inside").write_bytes(b"kept")
    (workspace / "link.txt").symlink_to(workspace / "data" / "notes.txt")
    for name in ("folder.txt", "link.txt", "data/notes.txt/below"):
        with pytest.raises(openai.BadRequestError) as caught:
            files.create(environment.id, type="inline", path=f"/workspace/{name}", data="T0s=")
        assert caught.value.param == "path", name
    assert (workspace / "folder.txt" / "inside").read_bytes() == b"kept"
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "data" / "notes.txt").read_bytes() == new
    assert sorted(p.name for p in workspace.iterdir() if p.name.startswith(".corebox")) == []
    files.create(environment.id, type="inline", path="/workspace/after.txt", data="T0s=")


def test_a_self_hosted_file_is_replaced_on_disk(client: OpenAI, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "config.ini").write_bytes(b"[old]\n")
    os.mkfifo(workspace / "src" / "pipe")
    environment = {"type": "self_hosted", "workspace_directory": str(workspace)}
    _, environment_id = _turn(client, environment, "hello")
    assert (workspace / "src" / "config.ini").read_bytes() == b"[old]\n"
    files = client.beta.agents.environments.files
    written = files.create(
        environment_id, type="inline", path="/workspace/src/config.ini", data=_b64(b"[new]\n")
    )
    assert written.size_bytes == len(b"[new]\n")
    assert (workspace / "src" / "config.ini").read_bytes() == b"[new]\n"
    with pytest.raises(openai.BadRequestError) as caught:
        files.create(environment_id, type="inline", path="/workspace/src/pipe", data="T0s=")
    assert caught.value.param == "path"
    assert sorted(p.name for p in (workspace / "src").iterdir()) == ["config.ini", "pipe"]
