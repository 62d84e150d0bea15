"""The OpenAPI document states the server's own routes as they answer (health and
readiness, the archive lifecycle, the cluster, the harness matrix, bundles, the device
bootstrap), and every route it lists says in words what it does."""

from __future__ import annotations

import re

from tests.api.support import OpenApi, Surface, http, surface
from tests.api.test_openapi_control import Documented
from tests.api.test_run_control import start
from tests.conftest import API_KEY

__all__ = ["surface"]


def typed(spec: OpenApi, method: str, path: str) -> None:
    """The route's 200 names the schema of its body (so a response check has one)."""
    _, operation = spec.operation(method, path)
    content = operation["responses"]["200"].get("content", {}).get("application/json", {})
    assert "schema" in content, f"{method} {path} answers 200 with no documented body"


def test_health_and_readiness_answer_as_documented(surface: Surface) -> None:
    base = surface.server.base_url
    for key in (None, API_KEY, surface.core_key):
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        for path in ("/healthz", "/readyz"):
            typed(surface.openapi, "GET", path)
            status, body, _ = http(base, "GET", path, None, headers)
            assert status == 200, (path, body)
            surface.openapi.check_response("GET", path, status, body)
    _, readyz = surface.openapi.operation("GET", "/readyz")
    assert "503" in readyz["responses"], "a server that is not ready answers 503, with evidence"


def test_archive_and_unarchive_answer_as_documented(surface: Surface) -> None:
    _, key = surface.project()
    call = Documented(surface, key)
    client = surface.client(key)
    session_id = start(client, "/say archived")
    agent_id = client.beta.agents.create(model="scripted", instructions="a").id
    hosted = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    environment_id = hosted.id
    for kind, noun, resource_id in (
        ("sessions", "session", session_id),
        ("agents", "agent", agent_id),
        ("environments", "environment", environment_id),
    ):
        for change in ("archive", "unarchive"):
            typed(surface.openapi, "POST", f"/x/v1/{kind}/{resource_id}/{change}")
        status, archived = call("POST", f"/x/v1/{kind}/{resource_id}/archive")
        assert status == 200 and archived["archived"] is True, archived
        assert (archived["kind"], archived["id"]) == (noun, resource_id)
        status, restored = call("POST", f"/x/v1/{kind}/{resource_id}/unarchive")
        assert (status, restored["archived"], restored["archived_at"]) == (200, False, None)


def test_cluster_and_harnesses_answer_as_documented(surface: Surface) -> None:
    call = Documented(surface, surface.core_key)
    for method, path in (
        ("GET", "/core/v1/cluster"),
        ("GET", "/core/v1/harnesses"),
        ("POST", "/api/v1/agent-daemon/bootstrap"),
    ):
        typed(surface.openapi, method, path)
    status, cluster = call("GET", "/core/v1/cluster")
    assert status == 200 and cluster["process_id"] in [p["id"] for p in cluster["processes"]]
    status, harnesses = call("GET", "/core/v1/harnesses")
    assert status == 200 and {"builtin", "scripted"} <= {h["kind"] for h in harnesses["data"]}
    status, device = call("POST", "/core/v1/devices", {"name": "laptop"}, core=True)
    assert status == 201, device
    status, where, _ = http(
        surface.server.base_url,
        "POST",
        "/api/v1/agent-daemon/bootstrap",
        {"device_id": device["id"]},
        {"Authorization": f"Bearer {device['credential']}"},
    )
    assert status == 200 and where["device_id"] == device["id"], where
    surface.openapi.check_response("POST", "/api/v1/agent-daemon/bootstrap", status, where)


def test_a_bundle_exported_and_imported_answers_as_documented(surface: Surface) -> None:
    project_id, key = surface.project()
    start(surface.client(key), "/say carried")
    call = Documented(surface, surface.core_key)
    typed(surface.openapi, "POST", "/core/v1/export")
    typed(surface.openapi, "POST", "/core/v1/import")
    status, bundle = call("POST", "/core/v1/export", {"project_id": project_id})
    assert status == 200 and len(bundle["sessions"]) == 1, bundle
    _, operation = surface.openapi.operation("POST", "/core/v1/import")
    assert [p["name"] for p in operation["parameters"] if p["in"] == "query"] == ["project_id"]
    status, imported = call("POST", f"/core/v1/import?project_id={project_id}", bundle)
    assert status == 200 and imported["project_id"] == project_id, imported
    assert set(imported["added"].values()) == {0}, imported  # all of it was there already


def test_every_documented_route_says_what_it_does(surface: Surface) -> None:
    spec: OpenApi = surface.openapi
    unnamed = [
        f"{method.upper()} {path}"
        for path, operations in spec.spec["paths"].items()
        for method, operation in operations.items()
        if re.fullmatch(r"[A-Z]+ /\S*", operation["summary"])
    ]
    assert unnamed == [], unnamed
    _, archive = spec.operation("POST", "/x/v1/agents/{resource_id}/archive")
    assert archive["summary"] == "Archive an agent"


def test_the_messaging_routes_document_their_answers(surface: Surface) -> None:
    # Their answers are checked against these schemas by every messaging test's client
    # (tests/allinone/comms/comms_helpers.py).
    spec: OpenApi = surface.openapi
    family = ("/api/v1/me", "/api/v1/contacts", "/api/v1/communication", "/core/v1/comms/")
    routes = [
        (method.upper(), path)
        for path, operations in spec.spec["paths"].items()
        for method in operations
        if path.startswith(family)
    ]
    assert len(routes) == 23, routes
    for method, path in routes:
        typed(spec, method, path)


def test_links_name_what_the_next_route_takes(surface: Surface) -> None:
    """A create's links give each new path parameter from the answer: its `id`, or the
    field of the parameter's own name where the answer has one."""
    spec: OpenApi = surface.openapi

    def taken(method: str, path: str, parameter: str) -> set[str]:
        _, operation = spec.operation(method, path)
        links = operation["responses"]["200"]["links"].values()
        return {link["parameters"][parameter] for link in links}

    # Opening a contact answers its first message; the contact is its `contact_id`.
    assert taken("POST", "/api/v1/contacts", "contact_id") == {"$response.body#/contact_id"}
    opened = "/core/v1/comms/instances/{instance_id}/contacts"
    assert taken("POST", opened, "contact_id") == {"$response.body#/contact_id"}
    assert taken("POST", "/core/v1/comms/roles", "role_id") == {"$response.body#/id"}
    # A skill version's routes take its number (`version`), as the SDK says.
    assert taken("POST", "/v1/skills/{skill_id}/versions", "version") == {"$response.body#/version"}
