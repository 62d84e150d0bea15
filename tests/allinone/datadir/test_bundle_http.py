"""Bundles over HTTP under `/core/v1` (the Core key): an export imported into another
project adds the rows once, and a project key is refused; a malformed bundle imports
nothing, and an import writes only under the rows it adds."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import urllib.request
import uuid
from typing import Any

from openai import OpenAI

from tests.allinone.datadir.test_bundle_rules import fresh_session
from tests.allinone.datadir.test_gc import managed_session
from tests.api.support import Surface, core_key, http, surface
from tests.api.test_run_control import start
from tests.conftest import API_KEY, Server

__all__ = ["surface"]


def _import(server: Server, key: str, project_id: str, data: bytes) -> tuple[int, dict]:  # type: ignore[type-arg]
    request = urllib.request.Request(
        f"{server.base_url}/core/v1/import?project_id={project_id}",
        data=data,
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.status, json.loads(reply.read())


def test_export_and_import_over_http(server: Server) -> None:
    key = core_key(server.data_dir)
    auth = {"Authorization": f"Bearer {key}"}
    with OpenAI(base_url=server.base_url + "/v1", api_key=API_KEY, max_retries=0) as client:
        agent = client.beta.agents.create(model="scripted", name="over http")
    status, projects, _ = http(server.base_url, "GET", "/core/v1/projects?limit=100", None, auth)
    assert status == 200
    source = next(p["id"] for p in projects["data"] if p["name"] == "Default project")
    status, target, _ = http(server.base_url, "POST", "/core/v1/projects", {"name": "t"}, auth)
    assert status == 200, target
    request = urllib.request.Request(
        f"{server.base_url}/core/v1/export",
        data=json.dumps({"project_id": source, "agents": [agent.id], "sessions": []}).encode(),
        method="POST",
        headers={**auth, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        bundle = reply.read()
    assert [a["id"] for a in json.loads(bundle)["agents"]] == [agent.id]
    # Ids are global: the agent already exists, so even another project gains nothing.
    added = _import(server, key, target["id"], bundle)[1]["added"]
    assert added == {"agents": 0, "agent_versions": 0, "agent_deployments": 0}
    refused, _, _ = http(
        server.base_url, "POST", "/core/v1/export", {"project_id": source},
        {"Authorization": f"Bearer {API_KEY}"},
    )  # fmt: skip
    assert refused in (401, 403)


def _exported(surface: Surface, project_id: str) -> dict[str, Any]:
    status, bundle = surface.core("POST", "/core/v1/export", {"project_id": project_id})
    assert status == 200, bundle
    document: dict[str, Any] = bundle
    return document


def test_a_malformed_bundle_is_refused_and_imports_nothing(surface: Surface) -> None:
    source, key = surface.project("source of rows")
    owner = surface.client(key)
    owner.beta.agents.create(model="scripted", name="carried")
    start(owner, "/say carried")
    exported = _exported(surface, source)
    [real_agent], [real_session] = exported["agents"], exported["sessions"]
    item = {**real_session["items"][0], "id": "msg_" + "d" * 28}
    target, key = surface.project("malformed")
    client = surface.client(key)
    header = {"format": "corebox-bundle", "version": 3}
    agent = {"id": "agent_" + "a" * 28, "config": "{}", "updated_at": 1}

    def agent_with(**changed: Any) -> dict[str, Any]:
        return {**real_agent, "id": "agent_" + "d" * 28, **changed}

    def session_with(**changed: Any) -> dict[str, Any]:
        # Its turns and items under ids of their own: those of the exported session are
        # on this server already, under that session.
        return {**fresh_session(real_session), "id": "sess_" + "d" * 28, **changed}

    def turn_with(**changed: Any) -> dict[str, Any]:
        return {**real_session["turns"][0], "id": "turn_" + "d" * 28, **changed}

    path = f"/core/v1/import?project_id={target}"
    for body in (
        {"header": "corebox-bundle"},
        {"header": header, "agents": 5},
        {"header": header, "agents": [5]},
        {"header": header, "agents": [{}]},
        {"header": header, "agents": [agent]},  # no name, no time: the store refuses it
        {"header": header, "sessions": [{"id": "sess_" + "b" * 28}]},
        {"header": header, "environments": [{"id": "env_" + "c" * 28, "config": [1]}]},
        # Rows the store would keep but no reader could read:
        {"header": header, "agents": [agent_with(versions=[5])]},
        {"header": header, "sessions": [session_with(turns=5)]},
        {"header": header, "file_bodies": ["x"]},
        {"header": header, "agents": [agent_with(created_at="yesterday")]},
        {"header": header, "agents": [agent_with(updated_at=2**70)]},
        {"header": header, "agents": [agent_with(config="not json")]},
        {"header": header, "agents": [agent_with(config="5")]},
        {"header": header, "sessions": [session_with(capability_notes="{}")]},
        {"header": header, "sessions": [session_with(items=[{**item, "payload": "5"}])]},
        {
            "header": header,
            "sessions": [session_with(turns=[{**real_session["turns"][0], "manifest": "x"}])],
        },
        {"header": header, "sessions": [session_with(turns=[turn_with(status="sideways")])]},
    ):
        status, reply = surface.core("POST", path, body)
        assert status == 400, (body, reply)
        assert reply["error"]["type"] == "invalid_request_error", reply
        message = reply["error"]["message"]
        assert "bundle" in message, reply
        assert re.search(r"Error|'\w+' object|attribute|iterable|\n", message) is None, reply
    status, reply = surface.core(
        "POST", path, {"header": header, "agents": [agent_with(created_at=[])]}
    )
    wanted = "the bundle's agents.created_at is an array, not a whole number"
    assert (status, reply["error"]["message"]) == (400, wanted), reply
    empty = _exported(surface, target)
    assert (empty["agents"], empty["sessions"], empty["environments"]) == ([], [], [])
    assert client.beta.agents.list().data == []
    # The same rows unchanged import: each refusal above was for what it changed.
    body = {"header": header, "agents": [agent_with()], "sessions": [session_with()]}
    status, reply = surface.core("POST", path, body)
    assert status == 200, reply
    assert (reply["added"]["agents"], reply["added"]["sessions"]) == (1, 1), reply
    assert [a.name for a in client.beta.agents.list().data] == ["carried"]
    session = client.beta.agents.sessions.retrieve("sess_" + "d" * 28)
    assert session.agent.id == real_session["agent_id"], session


def test_an_import_writes_only_under_the_rows_it_adds(surface: Surface) -> None:
    source, key = surface.project("source")
    owner = surface.client(key)
    session_id = start(owner, "/say kept")
    before = [t.id for t in owner.beta.agents.sessions.turns.list(session_id).data]
    [session] = _exported(surface, source)["sessions"]
    extra = {**session["turns"][0], "id": "turn_" + "f" * 28}
    target, key = surface.project("target")
    other = surface.client(key)
    path = f"/core/v1/import?project_id={target}"
    # The session exists (in another project): it is left as it is, with all under it.
    session["turns"].append(extra)
    header = {"format": "corebox-bundle", "version": 3}
    status, reply = surface.core("POST", path, {"header": header, "sessions": [session]})
    assert status == 200 and reply["added"]["sessions"] == 0, reply
    assert reply["added"]["turns"] == reply["added"]["items"] == 0, reply
    # A new session's rows are written under it, whatever session they name.
    new_id = "sess_" + "e" * 28
    fresh = {**session, "id": new_id, "turns": [{**extra, "session_id": session_id}]}
    fresh.update(items=[], function_calls=[], interactions=[], artifacts=[])
    status, reply = surface.core("POST", path, {"header": header, "sessions": [fresh]})
    assert status == 200 and (reply["added"]["sessions"], reply["added"]["turns"]) == (1, 1)
    after = [t.id for t in owner.beta.agents.sessions.turns.list(session_id).data]
    assert after == before  # nothing was added to the other project's session
    moved = other.beta.agents.sessions.turns.list(new_id).data
    assert [t.id for t in moved] == [extra["id"]]


def test_a_refused_import_leaves_no_blob_behind(surface: Surface) -> None:
    source, key = surface.project("source of a large artifact")
    managed_session(surface.client(key), b"an artifact")
    exported = _exported(surface, source)
    [session] = exported["sessions"]
    target, _ = surface.project("blobs")
    body = os.urandom(100_000)  # over the blob threshold, and stored nowhere yet
    sha256 = hashlib.sha256(body).hexdigest()
    # Ids of its own, and in an environment of its own (the exported one is the source
    # project's, which no other project's session may name).
    [environment] = exported["environments"]
    environment = {**environment, "id": "env_" + "b" * 28, "wire_id": str(uuid.uuid4())}
    carrier = {**fresh_session(session), "id": "sess_" + "b" * 28}
    carrier["environment_id"] = environment["id"]
    artifact = {
        **carrier["artifacts"][0],
        "id": session["artifacts"][0]["id"][:-8] + "b10b0000",
        "content_base64": base64.b64encode(body).decode(),
        "sha256": sha256,
        "size_bytes": len(body),
        "environment_id": environment["id"],
    }
    carrier["artifacts"] = [artifact]
    broken = {**session, "id": "sess_" + "c" * 28, "artifacts": [], "turns": [{"status": 5}]}
    header = {"format": "corebox-bundle", "version": 3}
    path = f"/core/v1/import?project_id={target}"
    blobs = surface.server.data_dir / "blobs"
    status, reply = surface.core(
        "POST",
        path,
        {"header": header, "environments": [environment], "sessions": [carrier, broken]},
    )
    assert status == 400, reply
    assert not [p for p in blobs.rglob("*") if sha256 in p.name]
    status, reply = surface.core(
        "POST", path, {"header": header, "environments": [environment], "sessions": [carrier]}
    )
    assert status == 200 and reply["added"]["artifacts"] == 1, reply
    assert [p for p in blobs.rglob("*") if sha256 in p.name]
