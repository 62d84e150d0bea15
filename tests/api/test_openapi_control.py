"""The OpenAPI document states the run-control, version, overlay and device routes as they
answer: each success status is listed (not left to the error `default`), and each body
matches the schema the document names for it, request bodies included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.api.support import OpenApi, Surface, core_key, http, surface
from tests.api.test_run_control import start
from tests.conftest import start_server

__all__ = ["surface"]


class Documented:
    """Raw calls checked against `/openapi.json`: a success's status is listed for the
    route and the request body it accepted matches the documented one; every answer
    matches its status's schema (an error, the `Error` envelope)."""

    def __init__(self, surface: Surface, key: str) -> None:
        self._surface = surface
        self._key = key

    def __call__(
        self, method: str, path: str, body: Any = None, *, core: bool = False, **headers: str
    ) -> tuple[int, Any]:
        key = self._surface.core_key if core else self._key
        status, decoded, _ = http(
            self._surface.server.base_url,
            method,
            path,
            body,
            {"Authorization": f"Bearer {key}", **headers},
        )
        spec = self._surface.openapi
        template, operation = spec.operation(method, path.split("?")[0])
        if status < 400:
            listed = sorted(operation["responses"])
            assert str(status) in listed, f"{method} {template} answered {status}, lists {listed}"
            if body is not None:  # what the server accepted, the document accepts too
                request = operation["requestBody"]["content"]["application/json"]["schema"]
                spec.validate(request, body, f"{method} {template} request")
        spec.check_response(method, path.split("?")[0], status, decoded)
        return status, decoded


def test_commands_answer_as_documented(surface: Surface) -> None:
    _, key = surface.project()
    call = Documented(surface, key)
    session_id = start(surface.client(key), "/say a\n/hang")
    commands = f"/x/v1/sessions/{session_id}/commands"
    status, pause = call("POST", commands, {"action": "pause"}, **{"Idempotency-Key": "p1"})
    assert status == 202 and pause["action"] == "pause", pause
    status, again = call("POST", commands, {"action": "pause"}, **{"Idempotency-Key": "p1"})
    assert (status, again["id"]) == (200, pause["id"])
    status, shown = call("GET", f"/x/v1/commands/{pause['id']}")
    assert (status, shown["id"]) == (200, pause["id"])
    status, listed = call("GET", f"{commands}?limit=5")
    assert status == 200 and [c["id"] for c in listed["data"]] == [pause["id"]]
    status, cancel = call("POST", commands, {"action": "cancel", "reason": "done here"})
    assert status == 202 and cancel["status"] == "applied", cancel
    status, error = call("POST", commands, {"action": "explode"})
    assert status == 400 and error["error"]["param"] == "action", error


def test_versions_and_deployments_answer_as_documented(surface: Surface) -> None:
    _, key = surface.project()
    call = Documented(surface, key)
    client = surface.client(key)
    agent = client.beta.agents.create(model="scripted", instructions="one")
    client.beta.agents.update(agent.id, instructions="two")
    base = f"/x/v1/agents/{agent.id}"
    status, versions = call("GET", f"{base}/versions?order=asc")
    assert status == 200 and [v["version"] for v in versions["data"]] == [1, 2]
    status, first = call("GET", f"{base}/versions/1")
    assert (status, first["agent"]["instructions"]) == (200, "one")
    # Digits, but not ASCII ones; or past the 64 bits versions are stored in.
    for bad, param in (
        ("versions/%C2%B2", "number"),
        ("versions?after=%D9%A2", "after"),
        (f"versions/{'9' * 30}", "number"),
        (f"versions?after={'9' * 4400}", "after"),
    ):
        status, error = call("GET", f"{base}/{bad}")
        assert (status, error["error"]["param"]) == (400, param), error
    # The document's pattern for a version number agrees with what the server takes.
    _, operation = surface.openapi.operation("GET", f"{base}/versions/1")
    (number,) = [p["schema"] for p in operation["parameters"] if p["name"] == "number"]
    for text, taken in (("2", True), ("002", True), (f"{agent.id}@1", True), ("0", False)):
        assert (re.fullmatch(number["pattern"], text) is not None) is taken, text
        assert (call("GET", f"{base}/versions/{text}")[0] == 200) is taken, text
    for text in ("\u00b2", "9" * 30, "1.0", f"{agent.id}@"):
        assert re.fullmatch(number["pattern"], text) is None, text
    status, moved = call("POST", f"{base}/deployments/production/promote", {"version": 2})
    assert (status, moved["version"]) == (200, 2)
    status, back = call("POST", f"{base}/deployments/production/rollback", {"version": 1})
    assert (status, back["version"]) == (200, 1)
    status, deployments = call("GET", f"{base}/deployments")
    assert status == 200 and {d["name"] for d in deployments["data"]} >= {"production"}
    status, audit = call("GET", f"{base}/audit?limit=10")
    assert status == 200 and audit["data"][0]["action"] == "rollback"


def test_overlays_and_devices_answer_as_documented(surface: Surface) -> None:
    project_id, key = surface.project()
    call = Documented(surface, key)
    body = {"kind": "egress", "project_id": project_id, "value": "loopback_only", "reason": "demo"}
    status, overlay = call("POST", "/core/v1/overlays", body, core=True)
    assert status == 200 and overlay["value"] == "loopback_only", overlay
    status, active = call("GET", "/core/v1/overlays?all=true", core=True)
    assert status == 200 and overlay["id"] in [o["id"] for o in active["data"]]
    status, cleared = call("DELETE", f"/core/v1/overlays/{overlay['id']}", core=True)
    assert status == 200 and cleared["cleared_at"] is not None
    body = {**body, "kind": "kill_switch", "value": "pause"}
    status, kill = call("POST", "/core/v1/overlays", body, core=True)
    assert status == 200, kill
    status, cleared = call("DELETE", f"/core/v1/overlays/{kill['id']}?resume=true", core=True)
    assert status == 200 and cleared["resumed"] == [], cleared

    status, device = call("POST", "/core/v1/devices", {"name": "laptop"}, core=True)
    assert status == 201 and device["credential"], device
    where = f"/core/v1/devices/{device['id']}"
    status, listed = call("GET", "/core/v1/devices?limit=100", core=True)
    assert status == 200 and device["id"] in [d["id"] for d in listed["data"]]
    assert all("credential" not in d for d in listed["data"])
    status, shown = call("GET", where, core=True)
    assert (status, shown["connected"]) == (200, False)
    status, stopping = call("POST", f"{where}/shutdown", core=True)
    assert (status, stopping["id"]) == (202, device["id"])
    status, revoked = call("DELETE", where, core=True)
    assert (status, revoked["status"]) == (200, "revoked")


def test_a_drain_answers_as_documented(tmp_path: Path) -> None:
    """A drain stops the server's work, so it runs on a server of its own."""
    server = start_server(tmp_path / "data")
    try:
        status, spec, _ = http(server.base_url, "GET", "/openapi.json")
        assert status == 200
        headers = {"Authorization": f"Bearer {core_key(server.data_dir)}"}
        status, drain, _ = http(server.base_url, "POST", "/core/v1/drain", None, headers)
        _, operation = OpenApi(spec).operation("POST", "/core/v1/drain")
        assert status == 202 and "202" in operation["responses"], (status, operation)
        assert drain["status"] == "draining"
        OpenApi(spec).check_response("POST", "/core/v1/drain", status, drain)
    finally:
        server.stop()
