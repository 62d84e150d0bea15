"""Environment files and artifacts through the official SDK: a listing without `path`
walks the whole tree, `/workspace/outputs` can be listed, a symbolic link is never
listed through, and a session in a reused environment reports only its own outputs as
artifacts."""

from __future__ import annotations

import base64
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from tests.api.test_environments import run_turn


def _stage(client: OpenAI, environment_id: str, path: str, text: str) -> None:
    client.beta.agents.environments.files.create(
        environment_id, type="inline", path=path, data=base64.b64encode(text.encode()).decode()
    )


def test_listing_without_path_walks_the_tree(client: OpenAI) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    for path in ("/workspace/top.txt", "/workspace/a/b/deep.txt", "/workspace/outputs/out.txt"):
        _stage(client, environment.id, path, path)
    listed = [f.path for f in client.beta.agents.environments.files.list(environment.id)]
    assert sorted(listed) == [
        "/workspace/a/b/deep.txt",
        "/workspace/outputs/out.txt",
        "/workspace/top.txt",
    ]
    outputs = client.beta.agents.environments.files.list(environment.id, path="/workspace/outputs")
    assert [f.path for f in outputs] == ["/workspace/outputs/out.txt"]
    subtree = client.beta.agents.environments.files.list(environment.id, path="/workspace/a")
    assert [f.path for f in subtree] == ["/workspace/a/b/deep.txt"]


def test_a_second_session_reports_only_its_own_outputs(client: OpenAI) -> None:
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    reused = {"type": "openai_hosted", "environment_id": environment.id}
    first, _ = run_turn(client, environment=reused, input="/write outputs/first.txt one")
    second, events = run_turn(client, environment=reused, input="/write outputs/second.txt two")
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    assert [a.path for a in client.beta.agents.sessions.artifacts.list(first)] == [
        "/workspace/outputs/first.txt"
    ]
    assert [a.path for a in client.beta.agents.sessions.artifacts.list(second)] == [
        "/workspace/outputs/second.txt"
    ]
    # A file the second session changes is its output again.
    third, _ = run_turn(client, environment=reused, input="/write outputs/first.txt changed")
    changed = list(client.beta.agents.sessions.artifacts.list(third))
    assert [a.path for a in changed] == ["/workspace/outputs/first.txt"]
    body = client.beta.agents.sessions.artifacts.content(changed[0].id, session_id=third)
    assert body.read() == b"changed"


def test_a_listing_refuses_a_symbolic_link_as_its_path(client: OpenAI, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "real" / "sub").mkdir(parents=True)
    (workspace / "real" / "a.txt").write_text("a")
    (workspace / "plain.txt").write_text("plain")
    (workspace / "outputs").mkdir()
    (workspace / "link").symlink_to(workspace / "real")
    (workspace / "flink").symlink_to(workspace / "real" / "a.txt")
    (workspace / "outputs" / "dir").symlink_to(workspace / "real")
    session_id, events = run_turn(
        client,
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
        input="hello",
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    session = client.beta.agents.sessions.retrieve(session_id)
    environment_id = session.environment.id  # type: ignore[union-attr]
    files = client.beta.agents.environments.files
    listed = sorted(f.path for f in files.list(environment_id))
    assert listed == ["/workspace/plain.txt", "/workspace/real/a.txt"]
    for path in ("link", "flink", "outputs/dir", "link/sub"):
        with pytest.raises(openai.BadRequestError) as refused:
            files.list(environment_id, path=f"/workspace/{path}")
        assert refused.value.param == "path", path
        assert "symbolic link" in refused.value.message, path
    # A regular file or a missing path lists nothing, as before.
    for path in ("plain.txt", "missing"):
        assert files.list(environment_id, path=f"/workspace/{path}").data == [], path
