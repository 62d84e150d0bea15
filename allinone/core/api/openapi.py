"""The OpenAPI 3.1 document served at `GET /openapi.json`.

`document(routes)` describes every HTTP route the app serves. Request bodies and most
responses come from the msgspec types the handlers decode and encode
(`msgspec.json.schema_components`); responses built as dicts use the hand-written
schemas of `allinone.core.api.schemas`. A served route missing from `OPERATIONS` is
still listed, without body schemas, so the document never omits a route.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import msgspec
from starlette.routing import BaseRoute, Route

from allinone import __version__
from allinone.core.api import schemas
from allinone.core.api.operations import OPERATIONS, Operation
from allinone.core.api.request_bodies import JSON_BODIES, MULTIPART_BODIES, header_parameters

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
    types += [t for t in JSON_BODIES.values() if t not in types]
    refs, components = msgspec.json.schema_components(types, ref_template=REF)
    by_type = dict(zip(types, refs, strict=True))
    components.update(schemas.COMPONENTS)
    components.update(schemas.CONTROL)
    components.update(schemas.PLATFORM)
    components.update(schemas.COMMS)
    paths: dict[str, dict[str, Any]] = {}
    for method, path in served:
        op = known.get((method, path)) or Operation(
            method, path, f"{method} {path}", auth=auth_for(path)
        )
        if op.body is None and (method, path) in JSON_BODIES:
            op = dataclasses.replace(op, body=JSON_BODIES[(method, path)])
        paths.setdefault(path, {})[method.lower()] = _operation(op, by_type)
    _link(paths, components)
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
    paths = op.extra.get("path", {})
    parameters: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": paths.get(name) or {"type": "string"},
        }
        for name in _PARAM.findall(op.path)
    ]
    for name in op.query:
        schema = op.extra.get("query", {}).get(name) or _QUERY.get(name, {})
        parameters.append({"name": name, "in": "query", "required": False, "schema": schema})
        if name == "metadata":
            parameters[-1].update(style="deepObject", explode=True)
    parameters += header_parameters(op.method, op.path)
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
            **{str(status): _success(op, by_type) for status in (op.status, *op.also)},
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
        if op.body_limits:
            result["requestBody"]["description"] = op.body_limits
    multipart = MULTIPART_BODIES.get((op.method, op.path))
    if multipart is not None:
        result["requestBody"] = {
            "required": True,
            "content": {"multipart/form-data": {"schema": multipart}},
        }
    return result


def _link(paths: dict[str, dict[str, Any]], components: dict[str, Any]) -> None:
    """Add OpenAPI links from each create (`POST /x` answering an object with an `id`) to
    every operation on `/x/{id}` and below that needs no other new parameter, so that
    stateful clients (and schemathesis) can follow what a create returned. An answer with
    a field named as the parameter gives it instead of `id` (opening a contact answers
    its first message, whose `contact_id` names the contact)."""
    for path, operations in paths.items():
        create = operations.get("post")
        if create is None or path.endswith("}"):
            continue
        success = next((v for k, v in create["responses"].items() if k.startswith("2")), None)
        if success is None or "content" not in success:
            continue
        own = _PARAM.findall(path)
        fields = _fields(success, components)
        links: dict[str, Any] = {}
        for other, others in paths.items():
            match = re.fullmatch(re.escape(path) + r"/\{(\w+)\}(/.*)?", other)
            if match is None or _PARAM.findall(other) != [*own, match.group(1)]:
                continue
            new = match.group(1)
            for operation in others.values():
                parameters = {name: f"$request.path.{name}" for name in own}
                parameters[new] = f"$response.body#/{new if new in fields else 'id'}"
                links[operation["operationId"]] = {
                    "operationId": operation["operationId"],
                    "parameters": parameters,
                }
        if links:
            success["links"] = links


def _fields(response: dict[str, Any], components: dict[str, Any]) -> set[str]:
    """The property names of a response's JSON schema (through one `$ref`)."""
    schema = response["content"].get("application/json", {}).get("schema", {})
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return set(schema.get("properties", {}))


def _success(op: Operation, by_type: dict[Any, Any]) -> dict[str, Any]:
    if op.response is None:
        if op.content_type == "application/json":
            return {"description": "Accepted"}
        return {"description": "Content", "content": {op.content_type: {}}}
    schema = _schema(op.response, by_type)
    if op.page:
        schema = schemas.page_of(schema)
    return {"description": "OK", "content": {op.content_type: {"schema": schema}}}
