"""Bad input is a 400 in the API's error format and changes nothing.

Each class of bad body (not UTF-8, not JSON, not an object, nested too deeply, numbers
out of range, fields of the wrong shape) is sent to the routes that write, and the whole
database is compared before and after (`support.unchanged`). The server is this
module's own, so no other test's background work can move the database meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api import hostile
from tests.api.edge_client import Edge, resources
from tests.api.support import core_key
from tests.conftest import start_server
from tests.support import databases


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    server = start_server(tmp_path_factory.mktemp("edge") / "data")
    try:
        checked = Edge(server, core_key(server.data_dir), {})
        resources(checked)
        yield checked
    finally:
        server.stop()


WRITES = [
    ("POST", "/v1/agents"),
    ("POST", "/v1/agents/{agent_id}"),
    ("POST", "/v1/agents/sessions"),
    ("POST", "/v1/agents/sessions/{session_id}"),
    ("POST", "/v1/agents/sessions/{session_id}/events"),
    ("POST", "/v1/agents/environments"),
    ("POST", "/v1/agents/environments/{environment_id}/files"),
    ("POST", "/v1/agents/environments/templates"),
    ("POST", "/v1/agents/environments/templates/{template_id}"),
    ("POST", "/v1/agents/automations"),
    ("POST", "/v1/agents/automations/{automation_id}"),
    ("POST", "/v1/vaults"),
    ("POST", "/v1/vaults/{vault_id}"),
    ("POST", "/v1/vaults/{vault_id}/credentials"),
    ("POST", "/core/v1/projects"),
    ("POST", "/core/v1/projects/{project_id}/api_keys"),
    ("POST", "/core/v1/devices"),
]

NOT_JSON = {
    "invalid utf-8": b'{"name": "\xff\xfe\xfd"}',
    "lone surrogate": b'{"name": "\\ud800"}',
    "truncated": b'{"name": ',
    "NaN literal": b'{"name": NaN}',
    "Infinity literal": b'{"name": Infinity}',
    "float beyond double": b'{"name": 1e400}',
    "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
}
NOT_AN_OBJECT = {"array": b"[]", "string": b'"x"', "number": b"1", "null": b"null"}
TOO_DEEP = json.dumps({"metadata": hostile._deep(65)}).encode()
HUGE_INTEGER = b'{"name": "n", "metadata": {"k": 18446744073709551617}}'


@pytest.mark.parametrize(("method", "template"), WRITES)
def test_undecodable_bodies_are_invalid_json_and_change_nothing(
    edge: Edge, method: str, template: str
) -> None:
    for body in NOT_JSON.values():
        error = edge.rejects(method, template, body)
        assert error["code"] == "invalid_json", (body[:40], error)


@pytest.mark.parametrize(("method", "template"), WRITES)
def test_non_object_deep_and_out_of_range_bodies_change_nothing(
    edge: Edge, method: str, template: str
) -> None:
    for body in NOT_AN_OBJECT.values():
        error = edge.rejects(method, template, body)
        assert "must be a JSON object" in error["message"]
    error = edge.rejects(method, template, TOO_DEEP)
    assert "nests deeper" in error["message"]
    error = edge.rejects(method, template, HUGE_INTEGER)
    assert error["param"] == "metadata.k"


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


SCHEMA_AGENT = {"model": "scripted", "text": {"format": {"type": "json_schema"}}}
BAD_FIELDS: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/v1/agents", SCHEMA_AGENT, "text.format"),
    ("POST", "/v1/agents/{agent_id}", {"text": {"format": {"type": "json_schema"}}}, "text"),
    (
        "POST",
        "/v1/agents",
        {"model": "m", "text": {"format": {"type": "text", "schema": {}}}},
        "text.format",
    ),
    (
        "POST",
        "/v1/agents",
        {
            "model": "m",
            "text": {"format": {"type": "json_schema", "schema": {"maximum": 2**64}}},
        },
        "text.format.schema.maximum",
    ),
    (
        "POST",
        "/v1/agents",
        {
            "model": "m",
            "tools": [
                {"type": "function", "name": "no spaces", "description": "", "parameters": {}}
            ],
        },
        "tools[0].name",
    ),
    (
        "POST",
        "/v1/agents",
        {
            "model": "m",
            "tools": [{"type": "function", "name": "x" * 65, "description": "", "parameters": {}}],
        },
        "tools[0].name",
    ),
    ("POST", "/v1/agents", {"model": "m", "tools": [{"type": "function"}]}, "tools[0]"),
    ("POST", "/v1/agents", {"model": "m", "tools": ["lookup"]}, "tools[0]"),
    (
        "POST",
        "/v1/agents",
        {"model": "m", "multi_agent": {"enabled": True, "max_concurrent_subagents": -1}},
        "multi_agent.max_concurrent_subagents",
    ),
    (
        "POST",
        "/v1/agents",
        {"model": "m", "multi_agent": {"enabled": True, "max_concurrent_subagents": 0}},
        "multi_agent.max_concurrent_subagents",
    ),
    ("POST", "/v1/agents", {"model": "m", "x_corebox": {"harnes": "builtin"}}, "x_corebox"),
    ("POST", "/v1/agents", {"model": "m", "x_corebox": {"harness": {}}}, "x_corebox.harness"),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "none"}, "input": "hi", "x_corebox": {"tool_policy": "allow"}},
        "x_corebox.tool_policy",
    ),
    ("POST", "/v1/agents", {"model": "m" * 300}, "model"),
    ("POST", "/v1/agents", {"model": ""}, "model"),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "env": {"1BAD": "x"}}, "input": "hi"},
        "environment.env",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "env": {"A": "a\u0000b"}}, "input": "hi"},
        "environment.env",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "env": "A=b"}, "input": "hi"},
        "environment.env",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "files": [1]}, "input": "hi"},
        "environment.files[0]",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "packages": "left-pad"}, "input": "hi"},
        "environment.packages",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "setup_commands": ["true"]}, "input": "hi"},
        "environment.setup_commands[0]",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "network": "open"}, "input": "hi"},
        "environment.network",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "openai_hosted", "capability_directories": "/x"}, "input": "x"},
        "environment.capability_directories",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "cloud"}, "input": "hi"},
        "environment",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "self_hosted", "workspace_directory": ""}, "input": "hi"},
        "environment.workspace_directory",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "none"}, "input": "hi", "spend_control": {"limit": -1}},
        "spend_control.limit",
    ),
    (
        "POST",
        "/v1/agents/sessions",
        {"environment": {"type": "none"}, "input": "hi", "prompt_cache_options": {"ttl": "1h"}},
        "prompt_cache_options.ttl",
    ),
    (
        "POST",
        "/v1/agents/sessions/{session_id}",
        {"spend_control": {"limit": 0}},
        "spend_control.limit",
    ),
    (
        "POST",
        "/v1/agents/environments",
        {"environment": {"type": "openai_hosted", "env": {"A": 1}}},
        "environment.env",
    ),
    (
        "POST",
        "/v1/agents/environments",
        {"environment": {"type": "openai_hosted", "setup_commands": [{"command": "a\u0000"}]}},
        "environment.setup_commands[0].command",
    ),
    (
        "POST",
        "/v1/agents/environments",
        {"environment": {"type": "openai_hosted", "packages": {"npm": ["x"] * 257}}},
        "environment.packages.npm",
    ),
    (
        "POST",
        "/v1/agents/environments/{environment_id}/files",
        {"type": "folder", "path": "/workspace/f"},
        "type",
    ),
    (
        "POST",
        "/v1/agents/environments/{environment_id}/files",
        {"type": "inline", "path": "/workspace/f", "data": 5},
        "data",
    ),
    ("POST", "/v1/agents/environments/templates", {"env": {"A B": "x"}}, "env"),
    ("POST", "/v1/agents/environments/templates", {"files": [{"type": "inline"}]}, "files[0]"),
    (
        "POST",
        "/v1/agents/environments/templates/{template_id}",
        {"network": {"access": "some"}},
        "network.access",
    ),
    (
        "POST",
        "/v1/agents/automations",
        {"type": "once", "name": "n", "run_at": 2**40, "target": hostile.TARGET},
        "run_at",
    ),
    (
        "POST",
        "/v1/agents/automations",
        {"type": "once", "name": "n", "run_at": 2**63, "target": hostile.TARGET},
        "run_at",
    ),
    (
        "POST",
        "/v1/agents/automations",
        {"type": "once", "name": "n", "run_at": -1, "target": hostile.TARGET},
        "run_at",
    ),
    ("POST", "/v1/agents/automations/{automation_id}", {"run_at": 2**40}, "run_at"),
    ("POST", "/v1/vaults", {"name": "v", "metadata": {"k": 1}}, "metadata"),
    ("POST", "/core/v1/projects", {"name": "x" * 300}, "name"),
    ("POST", "/core/v1/devices", {"name": ""}, "name"),
]


@pytest.mark.parametrize(
    ("method", "template", "body", "param"),
    BAD_FIELDS,
    ids=[f"{m} {t} {p}" for m, t, _, p in BAD_FIELDS],
)
def test_fields_of_the_wrong_shape_name_the_parameter_and_change_nothing(
    edge: Edge, method: str, template: str, body: dict[str, Any], param: str
) -> None:
    error = edge.rejects(method, template, _json(body))
    assert str(error["param"] or "").startswith(param), error


def _multipart(*parts: tuple[bytes, bytes, bytes | None]) -> bytes:
    out = b""
    for name, value, filename in parts:
        disposition = b'form-data; name="' + name + b'"'
        if filename is not None:
            disposition += b'; filename="' + filename + b'"'
        out += b"--XX\r\nContent-Disposition: " + disposition + b"\r\n\r\n" + value + b"\r\n"
    return out + b"--XX--\r\n"


UPLOADS = {
    "purpose not utf-8": _multipart((b"purpose", b"\xff\xfe", None), (b"file", b"x", b"a")),
    "purpose wrong": _multipart((b"purpose", b"assistants", None), (b"file", b"x", b"a")),
    "no file": _multipart((b"purpose", b"user_data", None)),
    "filename with a slash": _multipart(
        (b"purpose", b"user_data", None), (b"file", b"x", b"a/../b")
    ),
    "filename too long": _multipart((b"purpose", b"user_data", None), (b"file", b"x", b"a" * 300)),
    "not multipart": b"garbage",
    "expiry of 5,000 digits": _multipart(
        (b"purpose", b"user_data", None),
        (b"expires_after[anchor]", b"created_at", None),
        (b"expires_after[seconds]", b"9" * 5000, None),
        (b"file", b"x", b"a"),
    ),
    "expiry in other digits": _multipart(
        (b"purpose", b"user_data", None),
        (b"expires_after[anchor]", b"created_at", None),
        (b"expires_after[seconds]", "\u0663\u0666\u0660\u0660".encode(), None),
        (b"file", b"x", b"a"),
    ),
}


@pytest.mark.parametrize("case", list(UPLOADS))
def test_bad_upload_fields_change_nothing(edge: Edge, case: str) -> None:
    edge.rejects(
        "POST",
        "/v1/files",
        UPLOADS[case],
        {"Content-Type": "multipart/form-data; boundary=XX"},
    )


def test_a_json_schema_agent_lists(edge: Edge) -> None:
    body = {
        "model": "scripted",
        "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
    }
    agent_id = edge.create("/v1/agents", body)
    status, listed = edge.send("GET", "/v1/agents?limit=100", b"")
    assert status == 200
    shown = {agent["id"]: agent for agent in listed["data"]}[agent_id]
    assert shown["text"]["format"] == {"type": "json_schema", "schema": {"type": "object"}}


def _execute(data_dir: Path, sql: str, args: tuple[Any, ...]) -> None:
    with databases.raw(databases.location(data_dir)) as db:
        db.execute(sql, args)


def test_stored_data_the_resources_cannot_show_does_not_fail_reads_or_start(
    fresh_dir: Path,
) -> None:
    """Rows written by an older build (an agent whose text.format the resource cannot
    show, an automation whose run_at the scheduler cannot hold, a template with
    malformed files and network) are read and the process starts; each field shows its
    default instead."""
    server = start_server(fresh_dir)
    try:
        edge = Edge(server, core_key(fresh_dir), {})
        agent_id = edge.create("/v1/agents", {"model": "scripted"})
        automation_id = edge.create(
            "/v1/agents/automations",
            {"type": "once", "name": "n", "run_at": hostile.RUN_AT, "target": hostile.TARGET},
        )
        template_id = edge.create("/v1/agents/environments/templates", {"name": "t"})
    finally:
        server.stop()
    bad_config = {
        "model": "scripted",
        "text": {"format": {"type": "json_schema"}, "verbosity": "low"},
        "tools": [{"type": "function"}],
    }
    _execute(
        fresh_dir, "UPDATE agents SET config = ? WHERE id = ?", (json.dumps(bad_config), agent_id)
    )
    _execute(fresh_dir, "UPDATE automations SET run_at = ? WHERE id = ?", (2**40, automation_id))
    bad_template = {"files": [{"type": "elsewhere"}], "network": "open", "packages": None}
    _execute(
        fresh_dir,
        "UPDATE environment_templates SET config = ? WHERE id = ?",
        (json.dumps(bad_template), template_id),
    )
    server = start_server(fresh_dir)
    try:
        edge = Edge(server, core_key(fresh_dir), {})
        status, listed = edge.send("GET", "/v1/agents", b"")
        assert status == 200, listed
        shown = listed["data"][0]
        assert shown["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
        assert shown["tools"] == []
        status, automation = edge.send("GET", f"/v1/agents/automations/{automation_id}", b"")
        assert status == 200, automation
        status, templates = edge.send("GET", "/v1/agents/environments/templates", b"")
        assert status == 200, templates
        shown_template = templates["data"][0]
        assert shown_template["files"] == []
        assert shown_template["network"] == {"access": "enabled", "allowed_domains": []}
    finally:
        server.stop()


def test_a_file_write_the_workspace_refuses_leaves_nothing_behind(edge: Edge) -> None:
    """The body is valid but the Runtime refuses the write (a directory is already at
    that path): 400, and not even the reservation row is kept."""
    template = "/v1/agents/environments/{environment_id}/files"
    data = {"type": "inline", "data": "aGk="}
    status, reply = edge.send(
        "POST", template, _json({**data, "path": "/workspace/refused/inner.txt"})
    )
    assert status == 200, reply
    error = edge.rejects("POST", template, _json({**data, "path": "/workspace/refused"}))
    assert error["param"] == "path"
