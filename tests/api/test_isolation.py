"""Project isolation on the host, tried as a hostile user with a second project's key
against a real `corebox serve`: `self_hosted` directories anywhere, symlinks inside a
workspace pointing out, `../` and absolute paths in every file-bearing field, and a
`builtin` agent with its own model provider asked to read and run things. Nothing
outside what the owner granted is reached, and never the data directory."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, http
from tests.conftest import API_KEY
from tests.support.model_server import MODEL, ModelServer, Reply

MODEL_KEY = "sk-hostile-model-0123456789"


def self_hosted(directory: Path | str) -> dict[str, Any]:
    return {"type": "self_hosted", "workspace_directory": str(directory)}


def scripted(client: OpenAI, text: str, environment: dict[str, Any]) -> tuple[str, list[Any]]:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=environment,  # type: ignore[arg-type]
            input=text,
            stream=True,
        )
    )
    return str(events[0].session.id), events


def turn_of(client: OpenAI, session_id: str) -> Any:
    return client.beta.agents.sessions.turns.list(session_id).data[0]


def refused(client: OpenAI, environment: dict[str, Any]) -> str:
    """Create a session with `environment`; it must be a 400 that created nothing."""
    before = client.beta.agents.sessions.list().data
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=environment,  # type: ignore[arg-type]
            input="/write stolen.txt x",
        )
    assert client.beta.agents.sessions.list().data == before
    body = caught.value.body
    assert isinstance(body, dict)
    return str(body["message"])


def test_a_second_project_binds_no_host_directory_it_was_not_granted(
    surface: Surface, tmp_path: Path
) -> None:
    project_id, key = surface.project("hostile")
    client = surface.client(key)
    data_dir = surface.server.data_dir
    (tmp_path / "mine").mkdir()
    (tmp_path / "into-data").symlink_to(data_dir)
    for directory in ("/", data_dir, data_dir / "secrets", data_dir / "workspaces", tmp_path):
        refused(client, self_hosted(directory))
    refused(client, self_hosted(tmp_path / "into-data"))
    refused(client, self_hosted(f"{tmp_path}/mine/../mine"))
    refused(client, self_hosted("relative/dir"))

    status, grants = surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    assert status == 200 and grants["workspace_roots"] == [str(tmp_path.resolve())]
    session_id, _ = scripted(
        client, "/write ok.txt fine\n/say done", self_hosted(tmp_path / "mine")
    )
    assert turn_of(client, session_id).status == "completed"
    assert (tmp_path / "mine" / "ok.txt").read_text() == "fine"
    # A symlink inside the granted root still resolves into the data directory.
    assert "data directory" in refused(client, self_hosted(tmp_path / "into-data"))
    refused(client, self_hosted(tmp_path / "into-data" / "workspaces"))

    # The data directory, or a root around it, is never grantable.
    for path in (str(data_dir), str(data_dir.parent), "/"):
        status, body = surface.core(
            "POST", f"/core/v1/projects/{project_id}/host_grants/workspace_roots", {"path": path}
        )
        assert status == 400, body
    status, grants = surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots/revoke",
        {"path": str(tmp_path)},
    )
    assert status == 200 and grants["workspace_roots"] == []
    refused(client, self_hosted(tmp_path / "mine"))


def test_no_project_reaches_another_projects_managed_workspace(
    client: OpenAI, surface: Surface, tmp_path: Path
) -> None:
    victim, _ = scripted(client, "/write private.txt mine\n/say ok", {"type": "openai_hosted"})
    assert turn_of(client, victim).status == "completed"
    managed = [p.parent for p in (surface.server.data_dir / "workspaces").glob("*/private.txt")]
    assert managed
    project_id, key = surface.project("hostile")
    hostile = surface.client(key)
    surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    (tmp_path / "victim").symlink_to(managed[0])
    refused(hostile, self_hosted(managed[0]))
    refused(hostile, self_hosted(tmp_path / "victim"))
    # Even the default project, whose configured root holds the data directory.
    refused(client, self_hosted(managed[0]))
    refused(client, self_hosted(surface.server.data_dir))
    refused(client, self_hosted(surface.server.data_dir.parent))


def test_symlinks_in_a_workspace_are_never_followed(
    client: OpenAI, surface: Surface, tmp_path: Path
) -> None:
    key_file = surface.server.data_dir / "secrets" / "core.key"
    before = key_file.read_bytes()
    workspace = tmp_path / "ws"
    (workspace / "outputs").mkdir(parents=True)
    (workspace / "leak").symlink_to(key_file)
    (workspace / "data").symlink_to(surface.server.data_dir)
    (workspace / "outputs" / "key.txt").symlink_to(key_file)
    (workspace / "outputs" / "all").symlink_to(surface.server.data_dir)
    for text in (
        "/write leak overwritten",
        "/write data/secrets/core.key overwritten",
        "/write data/planted.txt x",
        "/read leak\n/say {read}",
        "/read data/secrets/core.key\n/say {read}",
    ):
        session_id, events = scripted(client, text, self_hosted(workspace))
        turn = turn_of(client, session_id)
        assert turn.status == "failed", text
        assert "workspace" in turn.error.message
        assert not any(before.decode().strip() in str(e) for e in events)
    assert key_file.read_bytes() == before
    assert not (surface.server.data_dir / "planted.txt").exists()
    # Artifact capture takes regular files only, never what a symlink points at.
    session_id, _ = scripted(
        client, "/write outputs/real.txt mine\n/say ok", self_hosted(workspace)
    )
    artifacts = client.beta.agents.sessions.artifacts.list(session_id).data
    assert [a.path for a in artifacts] == ["/workspace/outputs/real.txt"]


@pytest.mark.parametrize(
    "text",
    [
        "/write ../escape.txt x",
        "/write /tmp/corebox-absolute.txt x",
        "/write /workspace/../escape.txt x",
        "/write a/../../escape.txt x",
        "/read ../escape.txt",
        "/read /etc/hostname",
    ],
)
def test_scripted_paths_stay_in_the_workspace(client: OpenAI, tmp_path: Path, text: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "escape.txt").write_text("outside")
    session_id, _ = scripted(client, text, self_hosted(workspace))
    turn = turn_of(client, session_id)
    assert turn.status == "failed" and turn.error.code == "invalid_request"
    assert (tmp_path / "escape.txt").read_text() == "outside"
    assert not Path("/tmp/corebox-absolute.txt").exists()


@pytest.mark.parametrize(
    "path",
    ["../escape.txt", "/workspace/../escape.txt", "/etc/passwd", "/workspace/a/../../x", "x"],
)
def test_environment_file_paths_stay_in_the_workspace(surface: Surface, path: str) -> None:
    client = surface.new_client("files")
    data = base64.b64encode(b"x").decode()
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.environments.create(
            environment={
                "type": "openai_hosted",
                "files": [{"type": "inline", "data": data, "path": path}],
            }
        )
    assert client.beta.agents.environments.list().data == []
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.environments.files.create(
            environment.id, type="inline", data=data, path=path
        )
    assert client.beta.agents.environments.files.list(environment.id).data == []


def builtin_session(
    client: OpenAI, model: ModelServer, workspace: Path, text: str
) -> tuple[str, list[Any]]:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment=self_hosted(workspace),  # type: ignore[arg-type]
            input=text,
            stream=True,
            extra_body={
                "x_corebox": {
                    "model_provider": {
                        "protocol": "chat_completions",
                        "base_url": model.base_url,
                        "api_key": MODEL_KEY,
                    },
                    "tool_policy": {"run_command": "allow"},
                }
            },
        )
    )
    return str(events[0].session.id), events


def test_a_builtin_agent_reads_and_runs_nothing_outside_its_workspace(
    surface: Surface, tmp_path: Path
) -> None:
    project_id, key = surface.project("hostile")
    client = surface.client(key)
    surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    data_dir = surface.server.data_dir
    secret = (data_dir / "secrets" / "core.key").read_text().strip()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "leak").symlink_to(data_dir / "secrets" / "core.key")
    relative = "../" * len(workspace.parts) + str(data_dir / "secrets" / "core.key")[1:]
    with ModelServer().running() as model:
        model.queue(
            Reply.call("read_file", {"path": str(data_dir / "secrets" / "core.key")}),
            Reply.call("read_file", {"path": relative}),
            Reply.call("read_file", {"path": "leak"}),
            Reply.call("list_directory", {"path": str(data_dir)}),
            Reply.call("write_file", {"path": str(data_dir / "planted.txt"), "content": "x"}),
            Reply.call("run_command", {"command": f"cat {data_dir}/secrets/core.key"}),
            Reply.call("run_command", {"command": f"echo x > {data_dir}/planted.txt"}),
            Reply.call("run_command", {"command": f"echo x > {tmp_path}/outside.txt"}),
            Reply.call("run_command", {"command": "echo hi > out.txt && ls /usr >/dev/null"}),
            Reply.call("run_command", {"command": "env"}),
            Reply.say("Done."),
        )
        session_id, _ = builtin_session(client, model, workspace, "find the core key")
        told = [r.body["messages"][-1]["content"] for r in model.requests[1:]]
    assert client.beta.agents.sessions.turns.list(session_id).data[0].status == "completed"
    assert len(told) == 10
    assert all(secret not in str(request.body) for request in model.requests)
    assert all(reply.startswith("error:") for reply in told[:5]), told[:5]
    assert told[5].startswith("exit code 1") and "Permission denied" in told[5]
    assert not told[6].startswith("exit code 0") and not told[7].startswith("exit code 0")
    assert told[8] == "exit code 0\n"
    # The server's environment (its keys and settings) never reaches a command.
    assert told[9].startswith("exit code 0") and "PATH=" in told[9]
    assert "COREBOX_" not in told[9] and API_KEY not in told[9]
    assert (workspace / "out.txt").read_text() == "hi\n"
    assert not (data_dir / "planted.txt").exists()
    assert not (tmp_path / "outside.txt").exists()


def test_confinement_is_reported_on_readyz_and_the_session(
    client: OpenAI, surface: Surface
) -> None:
    status, body, _ = http(surface.server.base_url, "GET", "/readyz")
    assert status == 200 and body["checks"]["confinement"] == {"ok": True}
    status, body, _ = http(
        surface.server.base_url,
        "GET",
        "/readyz",
        headers={"Authorization": f"Bearer {client.api_key}"},
    )
    assert status == 200
    confinement = body["checks"]["confinement"]
    assert confinement["ok"] is True
    assert confinement["kind"] == "landlock" and confinement["abi"] >= 1
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="hi"
    )
    extension = session.model_extra["x_corebox"] if session.model_extra else None
    assert extension is not None
    assert extension["confinement"] == {"kind": "landlock", "abi": confinement["abi"]}
    status, grants = surface.core("GET", f"/core/v1/projects/{surface.project()[0]}/host_grants")
    assert status == 200 and grants["workspace_roots"] == [] and grants["trusted"] is False
    assert grants["commands_allowed"] is True


def test_setup_commands_run_confined_to_their_workspace(surface: Surface, tmp_path: Path) -> None:
    client = surface.new_client("setup")
    key = surface.server.data_dir / "secrets" / "core.key"
    outside = tmp_path / "planted.txt"
    marker = f"made-{uuid.uuid4().hex}.txt"
    command = (
        f"cat {key} > stolen.txt 2>/dev/null; echo x > {outside} 2>/dev/null;"
        f" ls {surface.server.data_dir} > listing.txt 2>/dev/null; echo ok > {marker}"
    )
    environment = client.beta.agents.environments.create(
        environment={"type": "openai_hosted", "setup_commands": [{"command": command}]}  # type: ignore[typeddict-item]
    )
    client.beta.agents.environments.files.list(environment.id)  # initialized by now
    assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    made = list((surface.server.data_dir / "workspaces").glob(f"*/{marker}"))
    assert len(made) == 1 and made[0].read_text() == "ok\n"
    assert (made[0].parent / "stolen.txt").read_text() == ""
    assert (made[0].parent / "listing.txt").read_text() == ""
    assert not outside.exists()


def test_a_revoked_root_stops_the_next_turn(surface: Surface, tmp_path: Path) -> None:
    project_id, key = surface.project("revoked")
    client = surface.client(key)
    grants = f"/core/v1/projects/{project_id}/host_grants/workspace_roots"
    surface.core("POST", grants, {"path": str(tmp_path)})
    session_id, _ = scripted(client, "/write a.txt one\n/say ok", self_hosted(tmp_path))
    assert turn_of(client, session_id).status == "completed"
    surface.core("POST", grants + "/revoke", {"path": str(tmp_path)})
    with client.beta.agents.sessions.events.stream(session_id) as live:
        client.beta.agents.sessions.events.create(
            session_id,
            events=[
                {
                    "type": "agent.session.input.message",
                    "input": [
                        {
                            "role": "user",
                            "content": [{"type": "input_text", "text": "/write b.txt two"}],
                        }
                    ],
                }
            ],
        )
        for event in live:
            if event.type in ("agent.session.turn.failed", "agent.session.turn.completed"):
                break
    latest = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert latest.status == "failed"
    assert latest.error is not None and "outside the directories" in latest.error.message
    assert not (tmp_path / "b.txt").exists()


def test_an_automation_targets_no_directory_the_project_was_not_granted(
    surface: Surface, tmp_path: Path
) -> None:
    client = surface.new_client("automations")
    message = [{"role": "user", "content": [{"type": "input_text", "text": "/write x.txt y"}]}]
    for directory in (surface.server.data_dir, tmp_path):
        target = {
            "type": "new_session",
            "agent": {"model": "scripted"},
            "environment": self_hosted(directory),
            "input": message,
        }
        with pytest.raises(openai.BadRequestError) as caught:
            client.beta.agents.automations.create(
                type="periodic",
                name="x",
                expression="0 * * * *",
                timezone="UTC",
                target=target,  # type: ignore[arg-type]
            )
        assert caught.value.param == "target.environment.workspace_directory"
    assert client.beta.agents.automations.list().data == []
