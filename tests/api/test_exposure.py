"""Nothing private without a key, and every route says which key it takes.

- `/healthz` and `/readyz` without a key: status and each check's `ok`, nothing else (no
  version, path, port, configuration or device identity); a project's key adds the
  version and evidence about the service; the Core key sees the full evidence.
- `/openapi.json` declares the security of every operation, and every operation that
  declares a key refuses a request without one with a 401.
- `limit` past 100 (or below 1) on any list route is a 400 naming `limit`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.allinone.comms.comms_helpers import PROTOCOL, Owner
from tests.api.support import Surface, http
from tests.conftest import API_KEY
from tests.support import databases

BETA = {"OpenAI-Beta": "agents=v1"}


def _text(body: Any) -> str:
    return json.dumps(body)


def test_health_without_a_key_reveals_nothing_private(surface: Surface) -> None:
    base = surface.server.base_url
    data_dir = str(surface.server.data_dir)
    status, health, _ = http(base, "GET", "/healthz")
    assert status == 200 and health == {"status": "alive"}
    for headers in ({}, {"Authorization": "Bearer not-a-key"}):
        status, ready, _ = http(base, "GET", "/readyz", headers=headers)
        assert status == 200, ready
        assert set(ready) == {"status", "checks", "missing"}
        assert all(check == {"ok": True} for check in ready["checks"].values()), ready
        text = _text(ready)
        for private in (data_dir, "local", "device", str(surface.server.port), "version"):
            assert private not in text


def test_a_project_key_sees_the_service_but_not_the_owners_machine(surface: Surface) -> None:
    base = surface.server.base_url
    _, key = surface.project()
    bearer = {"Authorization": f"Bearer {key}"}
    status, health, _ = http(base, "GET", "/healthz", headers=bearer)
    assert status == 200 and "version" in health
    status, ready, _ = http(base, "GET", "/readyz", headers=bearer)
    assert status == 200 and "version" in ready
    assert ready["checks"]["runtime"]["agent_kinds"]
    assert ready["checks"]["runtime"]["connected_count"] >= 1
    assert isinstance(ready["checks"]["storage"]["schema_version"], int)
    text = _text(ready)
    for private in (str(surface.server.data_dir), "device_id", "data_dir", "path", "port"):
        assert private not in text


def test_the_core_key_sees_the_full_evidence(surface: Surface) -> None:
    base = surface.server.base_url
    owner = {"Authorization": f"Bearer {surface.core_key}"}
    status, ready, _ = http(base, "GET", "/readyz", headers=owner)
    assert status == 200
    storage = ready["checks"]["storage"]
    database = databases.url(surface.server.data_dir)
    if database is None:
        assert storage["backend"] == "sqlite"
        assert storage["path"].startswith(str(surface.server.data_dir))
    else:  # the URL, never a password (the test cluster's has none to show)
        assert storage["backend"] == "postgresql"
        assert storage["path"] == database
    assert ready["checks"]["config"]["data_dir"] == str(surface.server.data_dir)
    assert [r["device_id"] for r in ready["checks"]["runtime"]["connected"]]


def _example(path: str) -> str:
    return re.sub(r"\{\w+\}", "x_missing", path)


def test_every_operation_declares_its_security_and_enforces_it(surface: Surface) -> None:
    base = surface.server.base_url
    schemes = surface.openapi.spec["components"]["securitySchemes"]
    checked = 0
    for path, methods in surface.openapi.spec["paths"].items():
        for method, operation in methods.items():
            assert "security" in operation, f"{method} {path} declares no security"
            required = operation["security"]
            for alternative in required:
                assert set(alternative) <= set(schemes), (method, path)
            if not required or {} in required:
                continue  # no key needed (openapi.json) or optional (health)
            headers = {**BETA, "X-A2A-Protocol": "1.4"}
            body = {} if method in ("post", "put") else None
            status, reply, _ = http(base, method.upper(), _example(path), body, headers)
            assert status == 401, (method, path, status, reply)
            checked += 1
    assert checked > 50
    spec = surface.openapi.spec["paths"]
    assert spec["/core/v1/devices"]["post"]["security"] == [{"coreKey": []}]
    assert spec["/api/v1/me"]["get"]["security"] == [{"instanceToken": []}]
    bootstrap = spec["/api/v1/agent-daemon/bootstrap"]["post"]["security"]
    assert bootstrap == [{"deviceCredential": []}]


def test_limit_out_of_range_is_a_400_on_every_list_route(surface: Surface) -> None:
    base = surface.server.base_url
    project = {"Authorization": f"Bearer {API_KEY}", **BETA}
    owner = {"Authorization": f"Bearer {surface.core_key}", **BETA}
    status, session, _ = http(
        base,
        "POST",
        "/v1/agents/sessions",
        {"agent": {"model": "scripted"}, "environment": {"type": "none"}, "input": "hi"},
        project,
    )
    assert status == 200, session
    comms = Owner(base)
    _, token = comms.instance(comms.role("limits")["id"], "limits-1")
    runtime = {"Authorization": f"Bearer {token}", **PROTOCOL}
    listed = 0
    for path, methods in surface.openapi.spec["paths"].items():
        operation = methods.get("get")
        if operation is None:
            continue
        query = {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
        if "limit" not in query or "{" in path.replace("{session_id}", ""):
            continue
        headers = owner if path.startswith("/core/") else project
        if operation["security"] == [{"instanceToken": []}]:
            headers = runtime  # an instance of the messaging platform (protocol 1.4)
        target = path.replace("{session_id}", session["id"])
        maximum = query["limit"]["maximum"]  # 100, or a route's own documented bound
        for limit in (str(maximum + 1), "0", str(maximum * 10)):
            status, reply, _ = http(base, "GET", f"{target}?limit={limit}", headers=headers)
            assert status == 400, (path, limit, reply)
            assert reply["error"]["param"] == "limit", (path, reply)
        status, reply, _ = http(base, "GET", f"{target}?limit={maximum}", headers=headers)
        assert status == 200, (path, reply)
        listed += 1
    assert listed >= 8
