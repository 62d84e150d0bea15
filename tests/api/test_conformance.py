"""Cross-cutting conformance: request ids on every response, the OpenAPI document, session
traces and the subagent read routes."""

from __future__ import annotations

import re
import urllib.request
from typing import Any

import openai
import pytest

from tests.api.support import REQUEST_ID, OpenApi, SchemaError, Surface, http, surface

__all__ = ["surface"]

EXPECTED_ROUTES = {
    ("post", "/v1/agents"),
    ("get", "/v1/agents"),
    ("get", "/v1/agents/{agent_id}"),
    ("post", "/v1/agents/{agent_id}"),
    ("delete", "/v1/agents/{agent_id}"),
    ("post", "/v1/agents/sessions"),
    ("get", "/v1/agents/sessions/{session_id}"),
    ("get", "/v1/agents/sessions/{session_id}/events"),
    ("post", "/v1/agents/sessions/{session_id}/events"),
    ("get", "/v1/agents/sessions/{session_id}/items"),
    ("get", "/v1/agents/sessions/{session_id}/turns"),
    ("get", "/v1/agents/sessions/{session_id}/turns/{turn_id}"),
    ("get", "/v1/agents/sessions/{session_id}/turns/{turn_id}/items"),
    ("get", "/v1/agents/sessions/{session_id}/traces"),
    ("get", "/v1/agents/sessions/{session_id}/subagents"),
    ("get", "/v1/agents/sessions/{session_id}/subagents/{subagent_id}"),
    ("get", "/v1/agents/sessions/{session_id}/subagents/{subagent_id}/items"),
    ("get", "/v1/agents/sessions/{session_id}/subagents/{subagent_id}/turns"),
    ("get", "/v1/agents/sessions/{session_id}/subagents/{subagent_id}/turns/{turn_id}"),
    ("get", "/v1/agents/sessions/{session_id}/subagents/{subagent_id}/turns/{turn_id}/items"),
    ("post", "/v1/agents/environments/templates"),
    ("get", "/v1/agents/environments/templates"),
    ("get", "/v1/agents/environments/templates/{template_id}"),
    ("post", "/v1/agents/environments/templates/{template_id}"),
    ("delete", "/v1/agents/environments/templates/{template_id}"),
    ("post", "/v1/agents/automations"),
    ("get", "/v1/agents/automations"),
    ("get", "/v1/agents/automations/{automation_id}"),
    ("post", "/v1/agents/automations/{automation_id}"),
    ("delete", "/v1/agents/automations/{automation_id}"),
    ("post", "/v1/agents/automations/{automation_id}/pause"),
    ("post", "/v1/agents/automations/{automation_id}/resume"),
    ("post", "/v1/agents/automations/{automation_id}/invocations"),
    ("get", "/v1/agents/automations/{automation_id}/invocations"),
    ("get", "/v1/agents/automations/{automation_id}/invocations/{invocation_id}"),
    ("post", "/v1/vaults"),
    ("get", "/v1/vaults"),
    ("get", "/v1/vaults/{vault_id}"),
    ("post", "/v1/vaults/{vault_id}"),
    ("delete", "/v1/vaults/{vault_id}"),
    ("post", "/v1/vaults/{vault_id}/credentials"),
    ("get", "/v1/vaults/{vault_id}/credentials"),
    ("get", "/v1/vaults/{vault_id}/credentials/{credential_id}"),
    ("post", "/v1/vaults/{vault_id}/credentials/{credential_id}"),
    ("delete", "/v1/vaults/{vault_id}/credentials/{credential_id}"),
    ("post", "/core/v1/projects"),
    ("get", "/core/v1/projects"),
    ("get", "/core/v1/projects/{project_id}"),
    ("post", "/core/v1/projects/{project_id}/archive"),
    ("post", "/core/v1/projects/{project_id}/api_keys"),
    ("get", "/core/v1/projects/{project_id}/api_keys"),
    ("post", "/core/v1/projects/{project_id}/api_keys/{key_id}/revoke"),
    ("get", "/healthz"),
    ("get", "/readyz"),
}


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def test_openapi_document_describes_every_route(surface: Surface) -> None:
    spec = surface.openapi.spec
    assert spec["openapi"] == "3.1.0"
    served = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert served >= EXPECTED_ROUTES, sorted(EXPECTED_ROUTES - served)
    schemas = spec["components"]["schemas"]
    for ref in _refs(spec):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas
    create = spec["paths"]["/v1/agents"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/AgentCreate"}
    assert schemas["AgentCreate"]["required"] == ["model"]
    assert schemas["AgentCreate"]["additionalProperties"] is False
    beta = [p for p in create["parameters"] if p["name"] == "OpenAI-Beta"]
    assert beta and beta[0]["required"] is True
    session = spec["paths"]["/v1/agents/sessions"]["post"]["requestBody"]
    assert session["content"]["application/json"]["schema"]["$ref"].endswith("/SessionCreate")


def test_the_validator_rejects_wrong_shapes(surface: Surface) -> None:
    check = surface.openapi
    good = {
        "id": "vault_1",
        "object": "vault",
        "created_at": 1,
        "metadata": {},
        "name": None,
    }
    check.check_response("GET", "/v1/vaults/vault_1", 200, good)
    for bad in ({**good, "created_at": "1"}, {**good, "object": "agent"}, {"id": "x"}):
        with pytest.raises(SchemaError):
            check.check_response("GET", "/v1/vaults/vault_1", 200, bad)
    with pytest.raises(SchemaError):
        check.check_response("GET", "/v1/vaults", 200, {"object": "list", "data": [{"id": 1}]})
    assert isinstance(OpenApi(check.spec).operation("GET", "/v1/agents/automations")[0], str)


def test_every_kind_of_response_has_a_request_id_and_the_hosted_headers(
    surface: Surface,
) -> None:
    _, key = surface.project()
    base = surface.server.base_url
    auth = {"Authorization": f"Bearer {key}", "OpenAI-Beta": "agents=v1"}
    seen = set()
    for method, path, headers, status in (
        ("GET", "/healthz", {}, 200),
        ("GET", "/openapi.json", {}, 200),
        ("GET", "/v1/agents", auth, 200),
        ("GET", "/v1/agents", {"OpenAI-Beta": "agents=v1"}, 401),
        ("GET", "/v1/agents", {"Authorization": f"Bearer {key}"}, 400),
        ("GET", "/v1/agents/agent_missing", auth, 404),
        ("GET", "/v1/nothing/here", auth, 404),
        ("PUT", "/v1/agents", auth, 405),
        ("GET", "/core/v1/projects", {}, 401),
        ("GET", "/v1/agents", {**auth, "X-Request-Id": "req_mine"}, 200),
    ):
        got, _, response_headers = http(base, method, path, headers=headers)
        assert got == status, (method, path)
        request_id = response_headers.get("x-request-id", "")
        assert REQUEST_ID.match(request_id), (method, path, request_id)
        assert response_headers.get("openai-version") == "2020-10-01", (method, path)
        assert response_headers.get("x-content-type-options") == "nosniff", (method, path)
        assert int(response_headers["openai-processing-ms"]) >= 0, (method, path)
        assert response_headers.get("cache-control") == "no-store", (method, path)
        seen.add(request_id)
    assert len(seen) == 10


def test_streams_carry_a_request_id_and_still_stream(surface: Surface) -> None:
    client = surface.new_client()
    with client.beta.agents.sessions.with_streaming_response.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="hello", stream=True
    ) as response:
        assert REQUEST_ID.match(response.headers["x-request-id"])
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data:")]
    assert len(lines) > 3
    session_id = re.search(r'"session":\{"id":"([^"]+)"', lines[0])
    assert session_id is not None
    _, key = surface.project()
    request = urllib.request.Request(
        f"{surface.server.base_url}/v1/agents/sessions/{session_id.group(1)}/events",
        headers={"Authorization": f"Bearer {key}", "OpenAI-Beta": "agents=v1"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 404  # another project's session
    assert REQUEST_ID.match(caught.value.headers["x-request-id"])
    caught.value.close()


def test_traces_are_one_otlp_request_per_root_turn(surface: Surface) -> None:
    client = surface.new_client()
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="one", stream=True
        )
    )
    session_id = events[0].session.id  # type: ignore[union-attr]
    with client.beta.agents.sessions.stream(session_id, input="/fail server_error") as stream:
        for _ in stream:
            pass
    turns = client.beta.agents.sessions.turns.list(session_id, order="asc").data
    assert [t.status for t in turns] == ["completed", "failed"]
    traces = client.beta.agents.sessions.traces.list(session_id, order="asc").data
    assert [t.id for t in traces] == [t.id for t in turns]
    for trace, turn in zip(traces, turns, strict=True):
        assert trace.object == "agent.session.trace" and trace.session_id == session_id
        assert trace.created_at == turn.created_at
        [resource_spans] = trace.otlp["resourceSpans"]  # type: ignore[misc]
        [scope] = resource_spans["scopeSpans"]
        [span] = scope["spans"]
        assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])
        assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
        assert int(span["startTimeUnixNano"]) == (turn.started_at or turn.created_at) * 10**9
        assert int(span["endTimeUnixNano"]) == turn.completed_at * 10**9  # type: ignore[operator]
        expected = 1 if turn.status == "completed" else 2
        assert span["status"]["code"] == expected
    for limit in (1, 2):
        for order in ("asc", "desc"):
            paged = client.beta.agents.sessions.traces.list(session_id, limit=limit, order=order)
            ids = [t.id for t in paged]
            assert ids == ([t.id for t in turns] if order == "asc" else [t.id for t in turns][::-1])
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.traces.list("sess_missing")


def test_subagent_routes_are_empty_or_missing(surface: Surface) -> None:
    client = surface.new_client()
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="x", stream=True
        )
    )
    session_id = events[0].session.id  # type: ignore[union-attr]
    turn_id = client.beta.agents.sessions.turns.list(session_id).data[0].id
    subagents = client.beta.agents.sessions.subagents
    page = subagents.list(session_id)
    assert page.data == [] and page.has_more is False
    for call in (
        lambda: subagents.retrieve("sub_1", session_id=session_id),
        lambda: subagents.items.list("sub_1", session_id=session_id),
        lambda: subagents.turns.list("sub_1", session_id=session_id),
        lambda: subagents.turns.retrieve(turn_id, session_id=session_id, subagent_id="sub_1"),
        lambda: subagents.turns.items.list(turn_id, session_id=session_id, subagent_id="sub_1"),
        lambda: subagents.list("sess_missing"),
    ):
        with pytest.raises(openai.NotFoundError):
            call()
