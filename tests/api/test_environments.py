"""Environments, environment files, uploads and artifacts through the official SDK."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.api.support import Surface
from tests.support import databases
from tests.support.sdk import send_and_settle


def run_turn(client: OpenAI, **kwargs: Any) -> tuple[str, list[Any]]:
    events = list(
        client.beta.agents.sessions.create(agent={"model": "scripted"}, stream=True, **kwargs)
    )
    return str(events[0].session.id), events


def test_self_hosted_write_becomes_a_downloadable_artifact(client: OpenAI, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    session_id, events = run_turn(
        client,
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
        input="/write outputs/report.txt quarterly numbers\n/say written",
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    assert (workspace / "outputs" / "report.txt").read_text() == "quarterly numbers"
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.environment.type == "self_hosted"
    artifacts = client.beta.agents.sessions.artifacts.list(session_id).data
    assert [a.path for a in artifacts] == ["/workspace/outputs/report.txt"]
    content = client.beta.agents.sessions.artifacts.content(artifacts[0].id, session_id=session_id)
    assert content.read() == b"quarterly numbers"
    # An unchanged file is not captured again by the next turn.
    with client.beta.agents.sessions.stream(session_id, input="again") as stream:
        stream.get_final_result()
    assert len(client.beta.agents.sessions.artifacts.list(session_id).data) == 1
    deleted = client.beta.agents.sessions.artifacts.delete(artifacts[0].id, session_id=session_id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.artifacts.retrieve(artifacts[0].id, session_id=session_id)


def test_hosted_environment_files_are_in_the_sessions_workspace(client: OpenAI) -> None:
    initial = base64.b64encode(b"seed data").decode()
    environment = client.beta.agents.environments.create(
        environment={
            "type": "openai_hosted",
            "files": [{"type": "inline", "data": initial, "path": "/workspace/data/seed.txt"}],
            "env": {"GREETING": "hi"},
        }
    )
    assert environment.type == "openai_hosted"
    written = client.beta.agents.environments.files.create(
        environment.id,
        type="inline",
        path="/workspace/outputs/from-api.txt",
        data=base64.b64encode(b"written through the API").decode(),
    )
    assert written.size_bytes == len(b"written through the API")
    listed = client.beta.agents.environments.files.list(environment.id, path="/workspace/data")
    assert [f.path for f in listed.data] == ["/workspace/data/seed.txt"]
    assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    # The session's turn runs in the same workspace: outputs/ written through the API is
    # captured as that turn's artifact, byte for byte.
    session_id, events = run_turn(
        client,
        environment={"type": "openai_hosted", "environment_id": environment.id},
        input="hello",
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    artifacts = client.beta.agents.sessions.artifacts.list(session_id).data
    assert [a.path for a in artifacts] == ["/workspace/outputs/from-api.txt"]
    body = client.beta.agents.sessions.artifacts.content(artifacts[0].id, session_id=session_id)
    assert body.read() == b"written through the API"


def test_file_upload_then_file_id_staging(client: OpenAI) -> None:
    uploaded = client.files.create(
        file=("notes.txt", io.BytesIO(b"uploaded bytes")), purpose="user_data"
    )
    assert uploaded.bytes == len(b"uploaded bytes")
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    staged = client.beta.agents.environments.files.create(
        environment.id, type="file_id", file_id=uploaded.id, path="/workspace/notes.txt"
    )
    assert staged.path == "/workspace/notes.txt"
    # The same path again replaces the file (see test_environment_file_replacement).
    again = client.beta.agents.environments.files.create(
        environment.id, type="inline", path="/workspace/notes.txt", data="T0s="
    )
    assert again.size_bytes == 2
    files = client.beta.agents.environments.files.list(environment.id)
    assert [(f.path, f.size_bytes) for f in files.data] == [("/workspace/notes.txt", 2)]


@pytest.mark.parametrize(
    "path",
    [
        "/tmp/x",
        "/workspace/../etc",
        "/workspace/outputs",
        "/workspace/.codex/x",
        "relative.txt",
        "/workspace/a//b",
        pytest.param("/workspace/" + "b" * 256, id="a-name-over-255-bytes"),
        pytest.param("/workspace/d/" + "\u00e9" * 128, id="a-name-over-255-utf8-bytes"),
    ],
)
def test_bad_file_paths_are_refused(client: OpenAI, path: str) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.environments.files.create(
            environment.id, type="inline", path=path, data=base64.b64encode(b"x").decode()
        )
    assert caught.value.param == "path"
    # The refusal changed nothing: the next write is accepted.
    client.beta.agents.environments.files.create(
        environment.id, type="inline", path="/workspace/next.txt", data="T0s="
    )


def test_a_name_of_255_bytes_is_written_and_refusals_block_nothing(client: OpenAI) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    files = client.beta.agents.environments.files
    longest = "/workspace/" + "n" * 255
    assert files.create(environment.id, type="inline", path=longest, data="T0s=").path == longest
    # The workspace's own file system refuses a path it cannot hold (the host's path to
    # the workspace makes this one longer than the OS allows): a definite 400, not an
    # unknown outcome, and later writes go through.
    deep = "/workspace/" + "/".join(["d" * 203] * 20)
    assert len(deep.encode()) <= 4096
    with pytest.raises(openai.BadRequestError) as caught:
        files.create(environment.id, type="inline", path=deep, data="T0s=")
    assert caught.value.param == "path"
    files.create(environment.id, type="inline", path="/workspace/after.txt", data="T0s=")
    listed = sorted(f.path for f in files.list(environment.id))
    assert listed == ["/workspace/after.txt", longest]


def test_a_write_left_unknown_at_a_name_no_file_system_holds_is_settled(
    client: OpenAI, server: Any
) -> None:
    """An older build left a write to a name over 255 bytes `unknown`, and refused every
    later write to the environment (409). No file system holds such a name, so that
    write certainly did not happen: the next write settles it and goes through. A write
    left unknown at a possible path where the workspace holds other bytes still blocks."""
    environments = client.beta.agents.environments
    stuck = environments.create(environment={"type": "openai_hosted"})
    blocked = environments.create(environment={"type": "openai_hosted"})
    left = [(stuck.id, "/workspace/" + "b" * 256), (blocked.id, "/workspace/maybe.txt")]
    environments.files.list(blocked.id)  # initialized: its workspace exists
    (server.data_dir / WORKSPACES_DIR / wire_uuid(blocked.id) / "maybe.txt").write_bytes(b"?")
    with databases.raw(databases.location(server.data_dir)) as db:
        for index, (environment_id, path) in enumerate(left):
            db.execute(
                "INSERT INTO environment_files (id, environment_id, path, type, file_id,"
                " size_bytes, sha256, state, created_at)"
                " VALUES (?, ?, ?, 'inline', NULL, 2, ?, 'unknown', 1)",
                (f"envfile_left{index}", environment_id, path, "0" * 64),
            )
    written = environments.files.create(
        stuck.id, type="inline", path="/workspace/ok.txt", data="T0s="
    )
    assert written.path == "/workspace/ok.txt"
    assert [f.path for f in environments.files.list(stuck.id)] == ["/workspace/ok.txt"]
    with pytest.raises(openai.ConflictError):
        environments.files.create(blocked.id, type="inline", path="/workspace/ok.txt", data="T0s=")


def test_inline_environment_files_with_impossible_paths_are_refused(surface: Surface) -> None:
    client = surface.new_client()
    for path in (
        "/workspace/" + "b" * 256,
        "/workspace/" + "/".join(["\u00e9" * 120] * 18),  # 2,188 characters, 4,348 bytes
    ):
        bad = {"type": "inline", "data": "T0s=", "path": path}
        with pytest.raises(openai.BadRequestError) as created:
            client.beta.agents.environments.create(
                environment={"type": "openai_hosted", "files": [bad]}
            )
        assert created.value.param == "environment.files[0].path"
        with pytest.raises(openai.BadRequestError) as session:
            client.beta.agents.sessions.create(
                agent={"model": "scripted"},
                environment={"type": "openai_hosted", "files": [bad]},  # type: ignore[list-item]
                input="hi",
            )
        assert session.value.param == "environment.files[0].path"
    assert client.beta.agents.sessions.list().data == []
    assert client.beta.agents.environments.list().data == []


def test_inline_files_over_5_mib_are_refused(client: OpenAI) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    big = base64.b64encode(b"x" * (5 * 1024 * 1024 + 1)).decode()
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.environments.files.create(
            environment.id, type="inline", path="/workspace/big.bin", data=big
        )


def test_environment_file_listing_pages_with_tokens(client: OpenAI) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    for name in ("a", "b", "c"):
        client.beta.agents.environments.files.create(
            environment.id,
            type="inline",
            path=f"/workspace/{name}.txt",
            data=base64.b64encode(name.encode()).decode(),
        )
    seen = [
        f.path
        for f in client.beta.agents.environments.files.list(environment.id, limit=1, order="asc")
    ]
    assert seen == ["/workspace/a.txt", "/workspace/b.txt", "/workspace/c.txt"]
    files = client.beta.agents.environments.files
    for query in ({"order": ""}, {"order": "sideways"}, {"limit": "1_0"}):
        with pytest.raises(openai.BadRequestError) as bad:
            files.list(environment.id, extra_query=query)
        assert bad.value.param == next(iter(query)), query


def test_environment_secrets_are_sealed_at_rest(client: OpenAI, server: Any) -> None:
    marker = "env-secret-7f3a9c1e"
    environment = client.beta.agents.environments.create(
        environment={
            "type": "openai_hosted",
            "env": {"TOKEN": marker},
            "setup_commands": [{"command": f"echo {marker}-setup > /dev/null"}],
        }
    )
    client.beta.agents.environments.files.list(environment.id)  # initialized by now
    assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    stored = databases.stored_bytes(server.data_dir)
    assert marker.encode() not in stored


def test_a_failing_setup_fails_the_environment_and_its_session_promptly(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "openai_hosted", "setup_commands": [{"command": "exit 3"}]},
            input="never runs",
            stream=True,
        )
    )
    types = [e.type for e in events]  # type: ignore[attr-defined]
    assert types[-2:] == ["agent.session.turn.failed", "agent.session.failed"]
    session = client.beta.agents.sessions.retrieve(events[0].session.id)  # type: ignore[attr-defined]
    assert session.status == "failed"
    assert session.environment is not None
    environment_id = session.environment.id  # type: ignore[union-attr]
    environment = client.beta.agents.environments.retrieve(environment_id)
    assert environment.status == "failed"
    turn = client.beta.agents.sessions.turns.list(session.id).data[0]
    assert turn.x_corebox["error_code"] == "sandbox_error"  # type: ignore[attr-defined]


def test_a_missing_self_hosted_directory_fails_the_turn_by_name_until_it_exists(
    client: OpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "not-yet"
    session_id, events = run_turn(
        client,
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
        input="/write a.txt one\n/say written",
    )
    assert events[-2].type == "agent.session.turn.failed", [e.type for e in events]
    failed = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert failed.error is not None and failed.error.code == "sandbox_error"
    assert str(workspace) in failed.error.message and "existing directory" in failed.error.message
    assert not workspace.exists()
    environment_id = client.beta.agents.sessions.retrieve(session_id).environment.id
    assert client.beta.agents.environments.retrieve(environment_id).status != "failed"
    # Nothing ran, so nothing is spoiled: once the directory exists new input works.
    workspace.mkdir()
    assert send_and_settle(client, session_id, "/write a.txt two").status == "completed"
    assert (workspace / "a.txt").read_text() == "two"
