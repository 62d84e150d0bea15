"""Projects and keys under `/core/v1` and the `corebox projects|keys` commands, and the
isolation of every `/v1` read, list, write and reference between projects."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone.core.api.streams import KEY_RECHECK_SECONDS
from tests.api.support import Surface, http, surface
from tests.conftest import ROOT, Server
from tests.support import databases

__all__ = ["surface"]


def test_core_key_file_is_private_and_stored_only_as_a_digest(server: Server) -> None:
    secrets_dir = server.data_dir / "secrets"
    key_file = secrets_dir / "core.key"
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((secrets_dir / "vault.key").stat().st_mode) == 0o600
    key = key_file.read_text().strip().encode()
    stored = databases.stored_bytes(server.data_dir)
    assert key not in stored
    assert key not in server.log.read_bytes()


def test_core_api_needs_the_core_key(surface: Surface) -> None:
    _, project_key = surface.project()
    base = surface.server.base_url
    for headers in ({}, {"Authorization": f"Bearer {project_key}"}, {"Authorization": "Bearer x"}):
        status, body, got = http(base, "GET", "/core/v1/projects", headers=headers)
        assert status == 401 and body["error"]["type"] == "invalid_request_error"
        assert got["www-authenticate"] == "Bearer"


def test_keys_are_shown_once_and_revoked_one_at_a_time(surface: Surface) -> None:
    project_id, first = surface.project("keys")
    status, issued = surface.core(
        "POST", f"/core/v1/projects/{project_id}/api_keys", {"name": "ci"}
    )
    assert status == 200 and issued["name"] == "ci" and issued["key"].startswith("cbx-")
    second = issued["key"]
    status, listed = surface.core("GET", f"/core/v1/projects/{project_id}/api_keys?order=asc")
    assert [k["name"] for k in listed["data"]] == [None, "ci"]
    assert all("key" not in k and k["status"] == "active" for k in listed["data"])
    assert first not in json.dumps(listed) and second not in json.dumps(listed)

    a, b = surface.client(first), surface.client(second)
    agent = a.beta.agents.create(model="scripted")
    assert b.beta.agents.retrieve(agent.id).id == agent.id
    status, revoked = surface.core(
        "POST", f"/core/v1/projects/{project_id}/api_keys/{issued['id']}/revoke"
    )
    assert status == 200 and revoked["status"] == "revoked" and revoked["revoked_at"]
    with pytest.raises(openai.AuthenticationError):
        b.beta.agents.list()
    assert a.beta.agents.retrieve(agent.id).id == agent.id

    status, archived = surface.core("POST", f"/core/v1/projects/{project_id}/archive")
    assert status == 200 and archived["status"] == "archived"
    with pytest.raises(openai.AuthenticationError):
        a.beta.agents.list()
    status, _ = surface.core("POST", f"/core/v1/projects/{project_id}/api_keys", {})
    assert status == 409
    status, listed = surface.core("GET", f"/core/v1/projects/{project_id}/api_keys")
    assert {k["status"] for k in listed["data"]} == {"revoked"}
    status, _ = surface.core("POST", f"/core/v1/projects/{project_id}/api_keys/key_x/revoke")
    assert status == 404
    status, _ = surface.core("GET", "/core/v1/projects/proj_missing")
    assert status == 404


def _all_pages(surface: Surface, path: str, limit: int, order: str) -> list[str]:
    seen: list[str] = []
    after = ""
    while True:
        status, page = surface.core("GET", f"{path}?limit={limit}&order={order}{after}")
        assert status == 200 and len(page["data"]) <= limit
        seen.extend(item["id"] for item in page["data"])
        if not page["has_more"]:
            break
        after = f"&after={page['last_id']}"
    assert len(seen) == len(set(seen))
    return seen


def test_projects_and_keys_page_in_both_orders(surface: Surface) -> None:
    made = [surface.project(f"p{i}")[0] for i in range(3)]
    keys_path = f"/core/v1/projects/{made[0]}/api_keys"
    for _ in range(2):
        assert surface.core("POST", keys_path, {})[0] == 200
    keys = _all_pages(surface, keys_path, 100, "asc")
    assert len(keys) == 3
    for limit in (1, 2):
        for order, expect in (("asc", made), ("desc", made[::-1])):
            seen = _all_pages(surface, "/core/v1/projects", limit, order)
            assert [p for p in seen if p in made] == expect
            wanted = keys if order == "asc" else keys[::-1]
            assert _all_pages(surface, keys_path, limit, order) == wanted


def _fill_project(client: OpenAI, tag: str) -> dict[str, Any]:
    agent = client.beta.agents.create(model="scripted", name=tag)
    vault = client.beta.agents.vaults.create(name=tag)
    credential = client.beta.agents.vaults.credentials.create(
        vault.id,
        name=tag,
        auth={"type": "static_bearer", "token": f"t-{tag}", "mcp_server_url": "https://m.x"},
    )
    template = client.beta.agents.environments.templates.create(name=tag)
    events = list(
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input=tag, stream=True
        )
    )
    session_id = events[0].session.id  # type: ignore[union-attr]
    automation = client.beta.agents.automations.create(
        type="periodic",
        name=tag,
        expression="0 3 * * *",
        timezone="UTC",
        target={"type": "existing_session", "session_id": session_id, "instructions": "go"},
    )
    return {
        "agent": agent.id,
        "vault": vault.id,
        "credential": credential.id,
        "template": template.id,
        "session": session_id,
        "automation": automation.id,
    }


def _each_read(client: OpenAI, ids: dict[str, Any]) -> list[Any]:
    agents = client.beta.agents
    return [
        lambda: agents.retrieve(ids["agent"]),
        lambda: agents.update(ids["agent"], name="stolen"),
        lambda: agents.delete(ids["agent"]),
        lambda: agents.vaults.retrieve(ids["vault"]),
        lambda: agents.vaults.update(ids["vault"], name="stolen"),
        lambda: agents.vaults.delete(ids["vault"]),
        lambda: agents.vaults.credentials.list(ids["vault"]),
        lambda: agents.vaults.credentials.retrieve(ids["credential"], vault_id=ids["vault"]),
        lambda: agents.vaults.credentials.update(
            ids["credential"], vault_id=ids["vault"], metadata={}
        ),
        lambda: agents.vaults.credentials.delete(ids["credential"], vault_id=ids["vault"]),
        lambda: agents.environments.templates.retrieve(ids["template"]),
        lambda: agents.environments.templates.update(ids["template"], name="stolen"),
        lambda: agents.environments.templates.delete(ids["template"]),
        lambda: agents.sessions.retrieve(ids["session"]),
        lambda: agents.sessions.traces.list(ids["session"]),
        lambda: agents.sessions.subagents.list(ids["session"]),
        lambda: agents.sessions.turns.list(ids["session"]),
        lambda: agents.automations.retrieve(ids["automation"]),
        lambda: agents.automations.update(ids["automation"], name="stolen"),
        lambda: agents.automations.pause(ids["automation"]),
        lambda: agents.automations.invocations.create(ids["automation"]),
        lambda: agents.automations.invocations.list(ids["automation"]),
        lambda: agents.automations.delete(ids["automation"]),
    ]


def _each_reference(client: OpenAI, ids: dict[str, Any]) -> list[Any]:
    agents = client.beta.agents
    message = [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]
    mcp = {
        "type": "mcp",
        "server_label": "m",
        "transport": {"type": "http", "server_url": "https://m.x"},
        "credential_id": ids["credential"],
    }
    return [
        lambda: agents.sessions.create(
            agent_id=ids["agent"], environment={"type": "none"}, input="x"
        ),
        lambda: agents.create(model="scripted", tools=[mcp]),  # type: ignore[list-item]
        lambda: agents.automations.create(
            type="once",
            name="x",
            run_at=4_000_000_000,
            target={"type": "existing_session", "session_id": ids["session"], "instructions": "x"},
        ),
        lambda: agents.automations.create(
            type="once",
            name="x",
            run_at=4_000_000_000,
            target={
                "type": "new_session",
                "agent_id": ids["agent"],
                "environment": {"type": "none"},
                "input": message,
            },
        ),
        lambda: agents.automations.create(
            type="once",
            name="x",
            run_at=4_000_000_000,
            target={
                "type": "new_session",
                "agent": {"model": "scripted"},
                "vault_ids": [ids["vault"]],
                "environment": {"type": "none"},
                "input": message,
            },
        ),
        lambda: agents.automations.create(
            type="once",
            name="x",
            run_at=4_000_000_000,
            target={
                "type": "new_session",
                "agent": {"model": "scripted"},
                "environment": {
                    "type": "openai_hosted",
                    "environment_template_id": ids["template"],
                },
                "input": message,
            },
        ),
    ]


def test_four_projects_never_see_or_touch_each_other(surface: Surface) -> None:
    clients = [surface.new_client(f"tenant{i}") for i in range(4)]
    owned = [_fill_project(client, f"tenant{i}") for i, client in enumerate(clients)]
    for i, client in enumerate(clients):
        assert [a.id for a in client.beta.agents.list()] == [owned[i]["agent"]]
        assert [v.id for v in client.beta.agents.vaults.list()] == [owned[i]["vault"]]
        templates = client.beta.agents.environments.templates.list()
        assert [t.id for t in templates] == [owned[i]["template"]]
        assert [a.id for a in client.beta.agents.automations.list()] == [owned[i]["automation"]]
        # Each project attacks its neighbour (a ring covers every project as both the
        # caller and the target); every attempt must look exactly like a missing resource.
        ids = owned[(i + 1) % len(owned)]
        for attempt in _each_read(client, ids) + _each_reference(client, ids):
            with pytest.raises(openai.NotFoundError):
                attempt()
        for cursor_list, cursor in (
            (client.beta.agents.list, ids["agent"]),
            (client.beta.agents.vaults.list, ids["vault"]),
            (client.beta.agents.environments.templates.list, ids["template"]),
            (client.beta.agents.automations.list, ids["automation"]),
        ):
            with pytest.raises(openai.NotFoundError):
                cursor_list(after=cursor)
    for i, client in enumerate(clients):
        agent = client.beta.agents.retrieve(owned[i]["agent"])
        assert agent.name == f"tenant{i}"
        assert client.beta.agents.vaults.retrieve(owned[i]["vault"]).name == f"tenant{i}"
        automation = client.beta.agents.automations.retrieve(owned[i]["automation"])
        assert automation.name == f"tenant{i}" and automation.status == "active"
        assert client.beta.agents.automations.invocations.list(owned[i]["automation"]).data == []


def _cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args, "--data-dir", str(server.data_dir),
         "--url", server.base_url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_cli_manages_projects_and_keys(server: Server) -> None:
    made = _cli(server, "projects", "create", "from-cli", "--json")
    assert made.returncode == 0, made.stderr
    project = json.loads(made.stdout)
    assert project["name"] == "from-cli" and project["status"] == "active"
    listed = _cli(server, "projects", "list")
    assert any(line.startswith(project["id"]) for line in listed.stdout.splitlines())

    issued = _cli(server, "keys", "create", project["id"], "--name", "laptop")
    assert issued.returncode == 0, issued.stderr
    key = next(
        line.split(": ", 1)[1] for line in issued.stdout.splitlines() if line.startswith("key: ")
    )
    with OpenAI(base_url=f"{server.base_url}/v1", api_key=key, max_retries=0) as client:
        assert client.beta.agents.list().data == []
        key_id = json.loads(_cli(server, "keys", "list", project["id"], "--json").stdout)[0]["id"]
        assert key not in _cli(server, "keys", "list", project["id"]).stdout
        assert _cli(server, "keys", "revoke", project["id"], key_id).returncode == 0
        with pytest.raises(openai.AuthenticationError):
            client.beta.agents.list()
    archived = _cli(server, "projects", "archive", project["id"], "--json")
    assert json.loads(archived.stdout)["status"] == "archived"
    missing = _cli(server, "keys", "revoke", project["id"], "key_missing")
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr


def test_cli_grants_and_revokes_host_roots(server: Server, tmp_path: Path) -> None:
    project = json.loads(_cli(server, "projects", "create", "granted", "--json").stdout)
    granted = _cli(server, "projects", "grant-root", project["id"], str(tmp_path), "--json")
    assert granted.returncode == 0, granted.stderr
    assert json.loads(granted.stdout)["workspace_roots"] == [str(tmp_path.resolve())]
    shown = _cli(server, "projects", "grants", project["id"])
    assert str(tmp_path.resolve()) in shown.stdout and "trusted: False" in shown.stdout
    trusted = _cli(server, "projects", "trust", project["id"], "--json")
    assert json.loads(trusted.stdout)["trusted"] is True
    untrusted = _cli(server, "projects", "trust", project["id"], "--no", "--json")
    assert json.loads(untrusted.stdout)["trusted"] is False
    revoked = _cli(server, "projects", "revoke-root", project["id"], str(tmp_path), "--json")
    assert json.loads(revoked.stdout)["workspace_roots"] == []
    refused = _cli(server, "projects", "grant-root", project["id"], str(server.data_dir))
    assert refused.returncode == 1 and "HTTP 400" in refused.stderr


def _said(client: OpenAI, session_id: str, text: str) -> None:
    message = {"role": "user", "content": [{"type": "input_text", "text": f"/say {text}"}]}
    client.beta.agents.sessions.events.create(
        session_id, events=[{"type": "agent.session.input.message", "input": [message]}]
    )


def _texts_until_refused(live: Any) -> list[str]:
    """The texts a stream delivered until it ended with `invalid_api_key`."""
    texts = []
    with pytest.raises(openai.APIError) as ended:
        for event in live:
            if event.type == "agent.session.turn.output_text.done":
                texts.append(event.text)
    assert ended.value.code == "invalid_api_key", ended.value
    return texts


@pytest.mark.parametrize("where", ["this server", "the database"])
def test_a_revoked_key_stops_reading_the_streams_it_opened(surface: Surface, where: str) -> None:
    project_id, key = surface.project("streams")
    status, issued = surface.core("POST", f"/core/v1/projects/{project_id}/api_keys", {})
    assert status == 200
    writer, watcher = surface.client(key), surface.client(issued["key"])
    session_id = writer.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="ready"
    ).id
    while writer.beta.agents.sessions.retrieve(session_id).status != "idle":
        pass
    with watcher.beta.agents.sessions.events.stream(session_id) as live:
        _said(writer, session_id, "before")
        for event in live:
            if event.type == "agent.session.turn.output_text.done":
                assert event.text == "before"  # type: ignore[attr-defined]
                break
        if where == "this server":
            # Revoked here: the stream ends at once (the turn that follows is written
            # well within `KEY_RECHECK_SECONDS` of the stream's opening).
            revoke = f"/core/v1/projects/{project_id}/api_keys/{issued['id']}/revoke"
            assert surface.core("POST", revoke)[0] == 200
            _said(writer, session_id, "after")
            assert _texts_until_refused(live) == []
        else:
            # As another Core process sharing the database would revoke it: this server
            # reads the key again before it reads on, once its last reading is older
            # than `KEY_RECHECK_SECONDS`; the next turn's text never reaches the stream.
            with databases.raw(databases.location(surface.server.data_dir)) as db:
                db.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = ?", (issued["id"],))
            time.sleep(KEY_RECHECK_SECONDS)
            _said(writer, session_id, "after")
            assert _texts_until_refused(live) == []
    with pytest.raises(openai.AuthenticationError):
        watcher.beta.agents.sessions.retrieve(session_id)
    assert writer.beta.agents.sessions.retrieve(session_id).id == session_id


def test_a_key_revoked_elsewhere_ends_a_quiet_stream_before_its_keepalive(
    surface: Surface,
) -> None:
    """Another Core process sharing the database revokes the key (here: the database,
    written directly) while nothing happens in the session: the stream still ends within
    `KEY_RECHECK_SECONDS`, before its first keepalive, not at it."""
    project_id, _ = surface.project("quiet")
    status, issued = surface.core("POST", f"/core/v1/projects/{project_id}/api_keys", {})
    assert status == 200
    watcher = surface.client(issued["key"])
    session_id = watcher.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="ready"
    ).id
    while watcher.beta.agents.sessions.retrieve(session_id).status != "idle":
        pass
    streams = watcher.beta.agents.sessions.events.with_streaming_response
    with streams.stream(session_id) as response:
        lines = response.iter_lines()
        assert next(lines) == ": connected"
        with databases.raw(databases.location(surface.server.data_dir)) as db:
            db.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = ?", (issued["id"],))
        seen = []
        for line in lines:
            seen.append(line)
            if line.startswith("data:"):
                break
    assert ": keepalive" not in seen, seen
    assert '"code":"invalid_api_key"' in seen[-1].replace(" ", ""), seen
