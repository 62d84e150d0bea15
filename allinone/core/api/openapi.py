"""The OpenAPI 3.1 document served at `GET /openapi.json`.

`document(routes)` describes every HTTP route the app serves. Request bodies and most
responses come from the msgspec types the handlers decode and encode
(`msgspec.json.schema_components`); responses built as dicts use the hand-written
schemas of `allinone.core.api.schemas`. A served route missing from `OPERATIONS` is
still listed, without body schemas, so the document never omits a route.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from starlette.routing import BaseRoute, Route

from allinone import __version__
from allinone.core.api import schemas
from allinone.core.api.operations import OPERATIONS, Operation

REF = "#/components/schemas/{name}"
_QUERY: dict[str, dict[str, Any]] = {
    "after": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "order": {"enum": ["asc", "desc"]},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
    "status": {"anyOf": [{"enum": ["active", "archived"]}, {"type": "array"}]},
    "include_obfuscation": {"type": "boolean"},
}
_PARAM = re.compile(r"{(\w+)}")

# Who may call a route, by the `auth` of its operation: each is an OpenAPI security
# requirement list (alternatives). `optional` routes answer without a key and show more
# with one; `none` routes need no key.
SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "project": [{"projectKey": []}],
    "core": [{"coreKey": []}],
    "project_or_core": [{"projectKey": []}, {"coreKey": []}],
    "device": [{"deviceCredential": []}],
    "instance": [{"instanceToken": []}],
    "optional": [{}, {"projectKey": []}, {"coreKey": []}],
    "none": [],
}
# Routes without an entry in OPERATIONS get the authentication their family uses, by
# path prefix (longest first), so every served route declares its security.
_AUTH_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("/api/v1/agent-daemon/", "device"),
    ("/api/v1/", "instance"),
    ("/core/v1/comms/", "project"),
    ("/core/v1/harnesses", "project_or_core"),
    ("/core/v1/", "core"),
    ("/healthz", "optional"),
    ("/readyz", "optional"),
    ("/openapi.json", "none"),
    ("/", "project"),
)


def document(routes: list[BaseRoute]) -> dict[str, Any]:
    served = _served(routes)
    known = {(op.method, op.path): op for op in OPERATIONS}
    types = [t for op in OPERATIONS for t in (op.body, op.response) if _is_type(t)]
    refs, components = msgspec.json.schema_components(types, ref_template=REF)
    by_type = dict(zip(types, refs, strict=True))
    components.update(schemas.COMPONENTS)
    paths: dict[str, dict[str, Any]] = {}
    for method, path in served:
        op = known.get((method, path)) or Operation(
            method, path, f"{method} {path}", auth=auth_for(path)
        )
        paths.setdefault(path, {})[method.lower()] = _operation(op, by_type)
    return {
        "openapi": "3.1.0",
        "info": {"title": "corebox", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "projectKey": {"type": "http", "scheme": "bearer"},
                "coreKey": {"type": "http", "scheme": "bearer"},
                "deviceCredential": {"type": "http", "scheme": "bearer"},
                "instanceToken": {"type": "http", "scheme": "bearer"},
            },
        },
    }


def auth_for(path: str) -> str:
    """The authentication a route outside OPERATIONS uses, by its path's family."""
    return next(auth for prefix, auth in _AUTH_BY_PREFIX if path.startswith(prefix))


def _served(routes: list[BaseRoute]) -> list[tuple[str, str]]:
    found = []
    for route in routes:
        if isinstance(route, Route) and route.methods:
            for method in sorted(route.methods - {"HEAD"}):
                found.append((method, route.path))
    return found


def _is_type(value: Any) -> bool:
    return value is not None and not isinstance(value, str)


def _schema(value: Any, by_type: dict[Any, Any]) -> dict[str, Any]:
    if isinstance(value, str):
        return {"$ref": REF.format(name=value)}
    schema: dict[str, Any] = by_type[value]
    return schema


def _operation(op: Operation, by_type: dict[Any, Any]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAM.findall(op.path)
    ]
    for name in op.query:
        parameters.append(
            {"name": name, "in": "query", "required": False, "schema": _QUERY.get(name, {})}
        )
        if name == "metadata":
            parameters[-1].update(style="deepObject", explode=True)
    if op.path.startswith(("/v1/agents", "/v1/vaults")):
        parameters.append(
            {
                "name": "OpenAI-Beta",
                "in": "header",
                "required": True,
                "schema": {"enum": ["agents=v1"]},
            }
        )
    result: dict[str, Any] = {
        "operationId": f"{op.method.lower()}_{re.sub(r'[^a-z0-9]+', '_', op.path.lower())}",
        "summary": op.summary,
        "parameters": parameters,
        "responses": {
            str(op.status): _success(op, by_type),
            "default": {
                "description": "An error",
                "content": {"application/json": {"schema": {"$ref": REF.format(name="Error")}}},
            },
        },
    }
    result["security"] = SECURITY[op.auth or auth_for(op.path)]
    if op.body is not None:
        result["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema(op.body, by_type)}},
        }
    return result


def _success(op: Operation, by_type: dict[Any, Any]) -> dict[str, Any]:
    if op.response is None:
        if op.content_type == "application/json":
            return {"description": "Accepted"}
        return {"description": "Content", "content": {op.content_type: {}}}
    schema = _schema(op.response, by_type)
    if op.page:
        schema = schemas.page_of(schema)
    return {"description": "OK", "content": {op.content_type: {"schema": schema}}}
