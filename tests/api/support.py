"""Helpers for the public-surface tests: per-test projects on the shared server, an SDK
client that records every JSON response, and a validator for the JSON Schema subset the
server's `/openapi.json` uses.

Every recorded response is checked against the OpenAPI document (by method, path
template and status) and for an `X-Request-Id: req_<32 hex>` header when the test ends.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openai import OpenAI

from tests.conftest import Server
from tests.support import databases

REQUEST_ID = re.compile(r"^req_[0-9a-f]{32}$")


def until(check: Callable[[], Any], deadline: float) -> Any:
    """Poll the server's observable state (its log, its API) until `check()` returns a
    value, and return it."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("the server did not reach the expected state in time")


def core_key(data_dir: Path) -> str:
    return (data_dir / "secrets" / "core.key").read_text(encoding="utf-8").strip()


def http(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """One raw request; returns (status, decoded JSON body or None, headers)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw, status, got = reply.read(), reply.status, dict(reply.headers)
    except urllib.error.HTTPError as exc:
        with exc:
            raw, status, got = exc.read(), exc.code, dict(exc.headers)
    got = {k.lower(): v for k, v in got.items()}
    decoded = json.loads(raw) if raw and "json" in got.get("content-type", "") else None
    return status, decoded, got


# --- the database as a whole, to prove a rejected request changed nothing ---------------


# The Core process's own liveness (its heartbeat and Runtime connections, renewed on a
# timer on PostgreSQL): written by the process, never by a request.
LIVENESS = frozenset({"core_processes", "runtime_connections", "cluster_firings"})


def database_state(data_dir: Path) -> dict[str, tuple[int, str]]:
    """Every table of the server's database but its liveness rows: (row count, digest of
    all its rows in a stable order). Equal states before and after a request mean it
    wrote nothing."""
    state: dict[str, tuple[int, str]] = {}
    with databases.raw(databases.location(data_dir), read_only=True) as db:
        for name in db.tables():
            if name in LIVENESS:
                continue
            rows = sorted(repr(tuple(row)) for row in db.execute(f'SELECT * FROM "{name}"'))
            digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
            state[name] = (len(rows), digest)
    return state


@contextmanager
def unchanged(data_dir: Path) -> Iterator[None]:
    """Assert that the block leaves every table of the database exactly as it was."""
    before = database_state(data_dir)
    yield
    after = database_state(data_dir)
    changed = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    assert not changed, f"tables changed by a rejected request: {changed}"


class DatabaseWatch:
    """`database_state` for long runs: the state is re-read only when the database says
    another connection committed (SQLite's `data_version`, PostgreSQL's WAL position), so
    checking after every request of thousands stays cheap."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._db = databases.Raw(databases.location(data_dir), read_only=True)
        self._version = self._data_version()
        self._state = database_state(data_dir)

    def _data_version(self) -> object:
        return self._db.version()

    def moved(self) -> bool:
        """Whether any table differs from what it was at the previous call."""
        version = self._data_version()
        if version == self._version:
            return False
        self._version = version
        state = database_state(self._data_dir)
        moved = state != self._state
        self._state = state
        return moved

    def close(self) -> None:
        self._db.close()


# --- a validator for the schema subset the document uses ---------------------------------


class SchemaError(AssertionError):
    pass


class OpenApi:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self._templates = []
        for template in spec["paths"]:
            pattern = "^" + re.sub(r"\{\w+\}", "[^/]+", template) + "$"
            literal = len(re.sub(r"\{\w+\}", "", template))
            self._templates.append((re.compile(pattern), literal, template))
        self._templates.sort(key=lambda t: -t[1])

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        for pattern, _, template in self._templates:
            if pattern.match(path) and method.lower() in self.spec["paths"][template]:
                return template, self.spec["paths"][template][method.lower()]
        raise SchemaError(f"{method} {path} is not in /openapi.json")

    def check_response(self, method: str, path: str, status: int, body: Any) -> None:
        template, op = self.operation(method, path)
        responses = op["responses"]
        response = responses.get(str(status)) or responses.get("default")
        assert response is not None, f"{method} {template}: no response for {status}"
        content = response.get("content", {}).get("application/json")
        if content is None or "schema" not in content:
            return
        self.validate(content["schema"], body, f"{method} {template} {status}")

    def validate(self, schema: dict[str, Any], value: Any, where: str = "$") -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            self.validate(self.spec["components"]["schemas"][name], value, where)
            return
        if "anyOf" in schema or "oneOf" in schema:
            options = schema.get("anyOf") or schema["oneOf"]
            errors = []
            for option in options:
                try:
                    self.validate(option, value, where)
                    return
                except SchemaError as exc:
                    errors.append(str(exc))
            raise SchemaError(f"{where}: matches no option: {errors}")
        if "enum" in schema and value not in schema["enum"]:
            raise SchemaError(f"{where}: {value!r} not in {schema['enum']}")
        if "const" in schema and value != schema["const"]:
            raise SchemaError(f"{where}: {value!r} != {schema['const']!r}")
        kind = schema.get("type")
        if kind is not None and not _is_kind(value, kind):
            raise SchemaError(f"{where}: {value!r} is not {kind}")
        if isinstance(value, dict):
            self._object(schema, value, where)
        if isinstance(value, list) and "items" in schema:
            for index, item in enumerate(value):
                self.validate(schema["items"], item, f"{where}[{index}]")
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                raise SchemaError(f"{where}: shorter than {schema['minLength']}")
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                raise SchemaError(f"{where}: longer than {schema['maxLength']}")
        if isinstance(value, int) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                raise SchemaError(f"{where}: below {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                raise SchemaError(f"{where}: above {schema['maximum']}")

    def _object(self, schema: dict[str, Any], value: dict[str, Any], where: str) -> None:
        for name in schema.get("required", []):
            if name not in value:
                raise SchemaError(f"{where}: missing {name!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                self.validate(properties[name], item, f"{where}.{name}")
            elif extra is False:
                raise SchemaError(f"{where}: unexpected {name!r}")
            elif isinstance(extra, dict):
                self.validate(extra, item, f"{where}.{name}")


def _is_kind(value: Any, kind: str | list[str]) -> bool:
    kinds = [kind] if isinstance(kind, str) else kind
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    return any(checks[k](value) for k in kinds)


# --- recording clients and per-test projects ---------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    status: int
    body: Any
    request_id: str | None


@dataclass
class Surface:
    """The shared server, its OpenAPI document, and everything the test's clients saw."""

    server: Server
    openapi: OpenApi
    core_key: str
    records: list[Recorded] = field(default_factory=list)
    clients: list[OpenAI] = field(default_factory=list)

    def core(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, decoded, headers = http(
            self.server.base_url,
            method,
            path,
            body,
            {"Authorization": f"Bearer {self.core_key}"},
        )
        self.records.append(
            Recorded(method, path.split("?")[0], status, decoded, headers.get("x-request-id"))
        )
        return status, decoded

    def project(self, name: str = "test") -> tuple[str, str]:
        """A new project and one key for it: (project_id, key)."""
        status, project = self.core("POST", "/core/v1/projects", {"name": name})
        assert status == 200, project
        status, key = self.core("POST", f"/core/v1/projects/{project['id']}/api_keys", {})
        assert status == 200, key
        return project["id"], key["key"]

    def client(self, key: str) -> OpenAI:
        def record(response: httpx2.Response) -> None:
            kind = response.headers.get("content-type", "")
            body = None
            if "application/json" in kind:
                response.read()
                body = response.json() if response.content else None
            self.records.append(
                Recorded(
                    response.request.method,
                    response.request.url.path,
                    response.status_code,
                    body,
                    response.headers.get("x-request-id"),
                )
            )

        sdk = OpenAI(
            base_url=f"{self.server.base_url}/v1",
            api_key=key,
            max_retries=0,
            _strict_response_validation=True,
            http_client=httpx2.Client(event_hooks={"response": [record]}),
        )
        self.clients.append(sdk)
        return sdk

    def new_client(self, name: str = "test") -> OpenAI:
        return self.client(self.project(name)[1])

    def verify(self) -> None:
        for item in self.records:
            assert item.request_id is not None and REQUEST_ID.match(item.request_id), item
            if item.body is not None:
                self.openapi.check_response(item.method, item.path, item.status, item.body)


@pytest.fixture
def surface(server: Server) -> Iterator[Surface]:
    status, spec, _ = http(server.base_url, "GET", "/openapi.json")
    assert status == 200
    checked = Surface(server, OpenApi(spec), core_key(server.data_dir))
    yield checked
    for sdk in checked.clients:
        sdk.close()
    checked.verify()


def commands_in(directory: Path) -> list[int]:
    """Live processes (not zombies) working in `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(directory):
                continue
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found
