"""The Starlette application: every route, and the error handlers."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp

from allinone.core.api.auth import Keys, guard
from allinone.core.api.bodies import BODY_IDLE_SECONDS, BODY_TOTAL_SECONDS, BodyDeadline
from allinone.core.api.errors import (
    ApiError,
    error_response,
    handle_api_error,
    handle_refused,
    handle_storage_unavailable,
    handle_unexpected,
    handle_unstorable,
    http_error,
    method_not_allowed,
    unknown_route,
)
from allinone.core.api.heads import HeadLimit
from allinone.core.api.request_ids import RequestIds
from allinone.core.api.routing import literal_first
from allinone.core.errors import Refused
from storage.errors import StorageUnavailable, Unstorable


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(unknown_route(request.method, request.url.path))
    if exc.status_code == 405:
        headers = {**(exc.headers or {}), "Allow": _allowed(request)}
        return error_response(method_not_allowed(request.method, headers))
    return error_response(http_error(exc.status_code, str(exc.detail)))


def _allowed(request: Request) -> str:
    """Every method the request's path answers. A path's methods may be spread over
    several routes (`GET` listing, `POST` creating), and the router's own 405 names only
    the first route it matched."""
    methods = {
        method
        for route in request.app.router.routes
        if isinstance(route, Route) and route.methods
        if route.matches(request.scope)[0] is Match.PARTIAL
        for method in route.methods
    }
    return ", ".join(sorted(methods))


def build_app(
    routes: list[BaseRoute],
    body_idle_seconds: float = BODY_IDLE_SECONDS,
    body_total_seconds: float = BODY_TOTAL_SECONDS,
    keys: Keys | None = None,
    pages: Sequence[BaseRoute] = (),
) -> ASGIApp:
    """The app: `routes` (in any order: a literal segment wins over a parameter, see
    `routing`) plus `GET /openapi.json` describing them, wrapped so every HTTP
    response, errors included, carries an `X-Request-Id`, a complete request head
    larger than the connection protocols allow is refused (431, `heads`), and a request
    body that stalls for `body_idle_seconds`, or is not complete within
    `body_total_seconds`, is refused (408). With `keys`, every route is authenticated
    under its path's policy (`auth.POLICIES`) before its handler runs. `pages` (the
    console's static files) need no key and are not part of the API: they are served as
    they are, outside the authentication policies and `/openapi.json`."""
    routes = literal_first(routes)
    if keys is not None:
        guard(routes, keys)
    spec: list[bytes] = []  # built by the first request for it, not at start-up

    async def openapi_json(request: Request) -> Response:
        if not spec:
            from allinone.core.api import openapi

            spec.append(msgspec.json.encode(openapi.document(routes)))
        return Response(spec[0], media_type="application/json")

    app = Starlette(
        routes=[*routes, Route("/openapi.json", openapi_json, methods=["GET"]), *pages],
        exception_handlers={
            ApiError: handle_api_error,
            Refused: handle_refused,
            StorageUnavailable: handle_storage_unavailable,
            Unstorable: handle_unstorable,
            HTTPException: _http_error,
            Exception: handle_unexpected,
        },
    )
    return RequestIds(HeadLimit(BodyDeadline(app, body_idle_seconds, body_total_seconds)))
