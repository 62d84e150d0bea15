"""Bundles over HTTP under `/core/v1` (the Core key): an export imported into another
project adds the rows once, and a project key is refused."""

from __future__ import annotations

import json
import urllib.request

from openai import OpenAI

from tests.api.support import core_key, http
from tests.conftest import API_KEY, Server


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
