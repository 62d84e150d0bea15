"""A raw HTTP client for the edge-validation tests and the resources they act on.

`Edge.send` sends exact bytes (so undecodable bodies can be sent) with the right
credential; `Edge.rejects` asserts a 400 in the API's error format that left the
database unchanged.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from openai import OpenAI

from tests.api import hostile
from tests.api.support import unchanged
from tests.conftest import API_KEY, Server


@dataclass
class Edge:
    server: Server
    core: str
    ids: dict[str, str]

    def send(
        self,
        method: str,
        template: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        key: str | None = None,
    ) -> tuple[int, Any]:
        """One request; the Core key for `/core/v1/...` routes, else the project key,
        unless `key` names another credential."""
        path = template.format(**self.ids)
        if key is None:
            key = self.core if template.startswith("/core") else API_KEY
        request = urllib.request.Request(
            f"{self.server.base_url}{path}",
            data=body,
            method=method,
            headers={
                "Authorization": f"Bearer {key}",
                "OpenAI-Beta": "agents=v1",
                "Content-Type": "application/json",
                **(headers or {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                status, raw = reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            with exc:
                status, raw = exc.code, exc.read()
        return status, json.loads(raw) if raw else None

    def create(self, template: str, body: dict[str, Any]) -> str:
        status, reply = self.send("POST", template, json.dumps(body).encode())
        assert status in (200, 201), reply
        return str(reply["id"])

    def rejects(
        self,
        method: str,
        template: str,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Send `body`, assert a 400 in the error format and an unchanged database, and
        return the error object."""
        with unchanged(self.server.data_dir):
            status, reply = self.send(method, template, body, headers)
        assert status == 400, (template, body[:200], reply)
        error: dict[str, Any] = reply["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error"
        return error


def settled_session(sdk: OpenAI, **kwargs: Any) -> Any:
    events = list(
        sdk.beta.agents.sessions.create(
            agent={"model": "scripted"}, input="hello", stream=True, **kwargs
        )
    )
    return events[0].session


def resources(edge: Edge) -> None:
    """One settled session of each environment kind, and one of every other resource
    the writing routes act on, their ids in `edge.ids`."""
    sdk = OpenAI(base_url=f"{edge.server.base_url}/v1", api_key=API_KEY, max_retries=0)
    with sdk:
        edge.ids["session_id"] = settled_session(sdk, environment={"type": "none"}).id
        hosted = settled_session(sdk, environment={"type": "openai_hosted"})
        edge.ids["environment_id"] = hosted.environment.id
    edge.ids["agent_id"] = edge.create("/v1/agents", {"model": "scripted"})
    edge.ids["template_id"] = edge.create("/v1/agents/environments/templates", {"name": "t"})
    edge.ids["automation_id"] = edge.create(
        "/v1/agents/automations",
        {"type": "once", "name": "n", "run_at": hostile.RUN_AT, "target": hostile.TARGET},
    )
    edge.ids["vault_id"] = edge.create("/v1/vaults", {"name": "v"})
    edge.ids["project_id"] = edge.create("/core/v1/projects", {"name": "p"})
