"""Route order: a route is never captured by a wider one, whatever the registration order."""

from __future__ import annotations

import asyncio
import random
import socket
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from allinone.app import Opened, build
from allinone.config import Config
from allinone.core.orchestration.timers import PRODUCTION
from allinone.redaction import Redactor
from allinone.route_order import captures, specific_first
from runtime.confinement import probe
from storage.database import Database


async def _endpoint(request: Request) -> Response:
    return Response()


def _route(path: str) -> Route:
    return Route(path, _endpoint, methods=["GET"])


@pytest.mark.parametrize(
    ("general", "specific", "expected"),
    [
        ("/v1/agents/{agent_id}", "/v1/agents/environments", True),
        ("/v1/agents/environments", "/v1/agents/{agent_id}", False),
        ("/v1/agents/{agent_id}", "/v1/agents/{other}", False),
        ("/v1/agents/{agent_id}", "/v1/agents/environments/templates", False),
        ("/a/{x}/b", "/a/c/b", True),
        ("/a/{x}/b", "/a/c/d", False),
        ("/a/{x}/b", "/a/c/{y}", False),
    ],
)
def test_captures(general: str, specific: str, expected: bool) -> None:
    assert captures(general, specific) is expected


def test_a_specific_route_moves_ahead_of_the_wider_one_and_nothing_else_moves() -> None:
    paths = [
        "/v1/vaults",
        "/v1/agents/{agent_id}",
        "/v1/files",
        "/v1/agents/environments",
        "/v1/agents/environments/{environment_id}",
        "/v1/agents/environments/templates",
    ]
    ordered = [_path(r) for r in specific_first([_route(p) for p in paths])]
    assert ordered == [
        "/v1/vaults",
        "/v1/agents/environments",
        "/v1/agents/{agent_id}",
        "/v1/files",
        "/v1/agents/environments/templates",
        "/v1/agents/environments/{environment_id}",
    ]


def test_a_parameter_spanning_segments_is_refused() -> None:
    with pytest.raises(ValueError, match="spanning"):
        specific_first([_route("/files/{rest:path}")])


def test_every_route_of_the_app_is_reached_whatever_the_registration_order(
    tmp_path: Path,
) -> None:
    routes = asyncio.run(_app_routes(tmp_path))
    assert len(routes) > 50
    shuffled = list(reversed(routes))
    random.Random(12).shuffle(shuffled)
    assert _captured(shuffled), "the shuffle should have put a wide route first"
    for candidate in (routes, specific_first(routes), specific_first(shuffled)):
        assert _captured(candidate) == []


def _captured(routes: list[BaseRoute]) -> list[tuple[str, str]]:
    """(path, wider path) for each route whose own path (parameters filled in) is first
    matched by a wider route."""
    found = []
    for route in routes:
        path = _path(route)
        concrete = "/".join("p1" if s.startswith("{") else s for s in path.split("/"))
        kind = "websocket" if type(route).__name__ == "WebSocketRoute" else "http"
        scope: dict[str, Any] = {"type": kind, "path": concrete, "method": "GET"}
        first = next(r for r in routes if r.matches(scope)[0] != Match.NONE)
        if captures(_path(first), path):
            found.append((path, _path(first)))
    return found


def _path(route: BaseRoute) -> str:
    path = getattr(route, "path", None)
    assert isinstance(path, str)
    return path


async def _app_routes(tmp_path: Path) -> list[BaseRoute]:
    """The routes the composition root serves, read from the built (never started) app."""
    db = await Database.open(tmp_path / "corebox.db")
    try:
        config = Config(host="127.0.0.1", port=0, data_dir=tmp_path, log_level="warning")
        with socket.socket() as sock:
            opened = Opened(sock, 1, db, None, None, bytes(32), probe(), None)
            parts = build(config, opened, PRODUCTION, Redactor())
        app: Any = parts.server.config.app
        while not hasattr(app, "routes"):
            app = app.app
        return [r for r in app.routes if _path(r) != "/openapi.json"]
    finally:
        await db.close()
