"""Authentication is one middleware with a declared policy per path prefix: routing comes
first (404/405 whatever the key), then the policy, then the handler."""

from __future__ import annotations

import random
import re

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from allinone.core.api.auth import POLICIES, Policy, policy_for
from allinone.core.api.routing import literal_first
from tests.api.support import core_key, http
from tests.conftest import API_KEY, Server

BETA = {"OpenAI-Beta": "agents=v1"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_the_longest_declared_prefix_decides() -> None:
    assert policy_for("/v1/agents/sessions") is Policy.AGENTS
    assert policy_for("/v1/files") is Policy.PROJECT
    assert policy_for("/core/v1/comms/roles") is Policy.PROJECT
    assert policy_for("/core/v1/harnesses") is Policy.CORE_OR_PROJECT
    assert policy_for("/core/v1/projects") is Policy.CORE
    assert policy_for("/api/v1/agent-daemon/ws") is Policy.PUBLIC
    assert policy_for("/readyz") is Policy.OPTIONAL
    with pytest.raises(LookupError):
        policy_for("/undeclared")
    assert all(prefix.startswith("/") for prefix in POLICIES)


def test_routing_answers_before_authentication(server: Server) -> None:
    status, body, _ = http(server.base_url, "GET", "/v1/no-such-thing")
    assert status == 404 and body["error"]["code"] == "unsupported_operation"
    status, body, headers = http(server.base_url, "PUT", "/v1/agents")
    assert status == 405 and "allow" in headers
    # `Allow` names every method the path answers, whichever routes serve them.
    for path in ("/core/v1/overlays", "/x/v1/sessions/sess_x/commands", "/core/v1/devices"):
        status, body, headers = http(server.base_url, "PUT", path)
        assert (status, headers["allow"]) == (405, "GET, HEAD, POST"), (path, body)


def test_each_policy_refuses_and_admits_as_declared(server: Server) -> None:
    core = core_key(server.data_dir)
    url = server.base_url
    # AGENTS: the beta header first, then a project key.
    status, body, _ = http(url, "GET", "/v1/agents", headers=bearer(API_KEY))
    assert status == 400 and body["error"]["code"] == "invalid_beta"
    status, body, headers = http(url, "GET", "/v1/agents", headers={**BETA, **bearer(core)})
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert http(url, "GET", "/v1/agents", headers={**BETA, **bearer(API_KEY)})[0] == 200
    # CORE: a project key is not enough.
    assert http(url, "GET", "/core/v1/projects", headers=bearer(API_KEY))[0] == 401
    assert http(url, "GET", "/core/v1/projects", headers=bearer(core))[0] == 200
    # CORE_OR_PROJECT: either key, but some key.
    assert http(url, "GET", "/core/v1/harnesses")[0] == 401
    assert http(url, "GET", "/core/v1/harnesses", headers=bearer(API_KEY))[0] == 200
    assert http(url, "GET", "/core/v1/harnesses", headers=bearer(core))[0] == 200
    # PROJECT without beta: the owner's comms routes.
    assert http(url, "GET", "/core/v1/comms/roles", headers=bearer(core))[0] == 401
    assert http(url, "GET", "/core/v1/comms/roles", headers=bearer(API_KEY))[0] == 200


def test_optional_policy_never_refuses_and_shows_more_to_a_key(server: Server) -> None:
    url = server.base_url
    status, public, _ = http(url, "GET", "/healthz", headers=bearer("cbx-unknown"))
    assert status == 200 and "version" not in public
    status, known, _ = http(url, "GET", "/healthz", headers=bearer(API_KEY))
    assert status == 200 and "version" in known


def _operations(server: Server) -> list[tuple[str, str]]:
    status, spec, _ = http(server.base_url, "GET", "/openapi.json")
    assert status == 200
    return [(path, method.upper()) for path, item in spec["paths"].items() for method in item]


async def _endpoint(request: Request) -> Response:
    return Response()


def _reserved_pairwise(path: str, others: list[str]) -> dict[str, frozenset[str]]:
    """For each parameter of `path`, the literal segments other paths have at its place
    after the same leading segments, found by comparing `path` with each other path."""
    mine = path.strip("/").split("/")
    found: dict[str, set[str]] = {}
    for other in others:
        theirs = other.strip("/").split("/")
        for index, segment in enumerate(mine):
            if index >= len(theirs):
                break
            param, their_param = (
                s.startswith("{") and s.endswith("}") for s in (segment, theirs[index])
            )
            if param and not their_param:
                found.setdefault(segment[1:-1].split(":")[0], set()).add(theirs[index])
            # The next place counts only while the segments so far are the same.
            if segment != theirs[index] and not (param and their_param):
                break
    return {name: frozenset(words) for name, words in found.items()}


def test_no_route_captures_another(server: Server) -> None:
    """Route order is not load-bearing: a concrete path of each served operation is fully
    matched by its own route and by no other, in whatever order the routes are listed."""
    operations = _operations(server)
    assert len(operations) > 40
    templates = sorted({path for path, _ in operations})
    served = {path: [m for p, m in operations if p == path] for path in templates}
    routes = literal_first([Route(p, _endpoint, methods=served[p]) for p in templates])
    for route in routes:  # what one pass reserves is what comparing each pair finds
        others = [p for p in templates if p != route.path]
        assert getattr(route, "reserved", {}) == _reserved_pairwise(route.path, others), route.path
    for order in (routes, routes[::-1], random.Random(7).sample(routes, len(routes))):
        for path, method in operations:
            scope = {"type": "http", "method": method, "path": re.sub(r"\{[^}]+\}", "x_1", path)}
            full = [r.path for r in order if r.matches(scope)[0] is Match.FULL]
            assert full == [path], (method, path, full)
    # Without the rule, the same table is order-dependent: the test can fail.
    plain = [Route(p, _endpoint, methods=served[p]) for p in templates]
    scope = {"type": "http", "method": "GET", "path": "/v1/agents/sessions"}
    assert len([r for r in plain if r.matches(scope)[0] is Match.FULL]) > 1
