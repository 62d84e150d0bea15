"""A hand-written generator of hostile request bodies.

For each route that takes a JSON body, `SEEDS` holds one valid body; `mutations(seed)`
yields that body with one position changed: every leaf replaced by each value of
`HOSTILE`, every object key dropped, an unknown key added, and a few whole-body
replacements (non-objects, deep nesting, invalid UTF-8). The server must answer each
with a status below 500. Everything is deterministic: no randomness, no clock.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

DEEP = 200

# Leaf replacements: wrong types, out-of-range numbers, hostile strings.
HOSTILE: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    2**63,
    -(2**63) - 1,
    2**64 + 1,
    1.5,
    1e308,
    "",
    "\x00",
    "a" * 70_000,
    "../../../etc/passwd",
    "\ud800",
    [],
    {},
)

Path = tuple[str | int, ...]


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": [value]}
    return value


def encode(value: Any) -> bytes:
    """JSON bytes; lone surrogates are kept as `\\ud800` escapes (not valid UTF-16)."""
    return json.dumps(value, ensure_ascii=True).encode()


def leaves(value: Any, path: Path = ()) -> Iterator[Path]:
    """Every position in `value`, containers included (so a whole object is replaced too)."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))


def _replaced(seed: Any, path: Path, new: Any) -> Any:
    body = copy.deepcopy(seed)
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return body


def _dropped(seed: Any, path: Path) -> Any:
    body = copy.deepcopy(seed)
    target = body
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return body


def mutations(seed: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    """(description, body bytes) for every mutation of `seed`."""
    yield "invalid utf-8", b'{"name": "\xff\xfe"}'
    yield "array body", b"[1, 2]"
    yield "string body", b'"x"'
    yield "null body", b"null"
    yield "deep body", encode(_deep(DEEP))
    yield "deeper body", b"[" * 100_000 + b"]" * 100_000
    yield "unknown key", encode({**seed, "x_unknown_field": 1})
    for path in leaves(seed):
        where = ".".join(str(p) for p in path)
        if isinstance(path[-1], str):
            yield f"drop {where}", encode(_dropped(seed, path))
        for value in HOSTILE:
            yield f"{where} = {str(value)[:20]!r}", encode(_replaced(seed, path, value))
        yield f"{where} nested deeply", encode(_replaced(seed, path, _deep(DEEP)))


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


AGENT = {
    "model": "scripted",
    "name": "hostile",
    "instructions": "be brief",
    "metadata": {"k": "v"},
    "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}, "verbosity": "low"},
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object"},
        }
    ],
    "multi_agent": {"enabled": True, "max_concurrent_subagents": 2},
    "reasoning": {"effort": "low", "summary": "auto"},
}
HOSTED = {
    "type": "openai_hosted",
    "env": {"GREETING": "hi"},
    "files": [{"type": "inline", "path": "/workspace/a.txt", "data": "aGk="}],
    "network": {"access": "enabled"},
    "packages": {"npm": []},
    "setup_commands": [{"command": "true"}],
    "capability_directories": [],
}
TARGET = {
    "type": "new_session",
    "agent": {"model": "scripted"},
    "environment": {"type": "none"},
    "input": [_message("hi")],
}
RUN_AT = 4_102_444_800  # 2100-01-01

# method, path template, seed body. Path parameters are filled by the caller.
SEEDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("POST", "/v1/agents", AGENT),
    ("POST", "/v1/agents/{agent_id}", {k: v for k, v in AGENT.items() if k != "model"}),
    (
        "POST",
        "/v1/agents/sessions",
        {"agent": {"model": "scripted"}, "environment": {"type": "none"}, "input": "hi"},
    ),
    ("POST", "/v1/agents/sessions", {"environment": HOSTED, "agent_id": "{agent_id}"}),
    (
        "POST",
        "/v1/agents/sessions/{session_id}",
        {"metadata": {"a": "b"}, "agent": {"model": "scripted"}},
    ),
    (
        "POST",
        "/v1/agents/sessions/{session_id}/events",
        {"events": [{"type": "agent.session.input.message", "input": [_message("hi")]}]},
    ),
    ("POST", "/v1/agents/environments", {"environment": HOSTED}),
    (
        "POST",
        "/v1/agents/environments/{environment_id}/files",
        {"type": "inline", "path": "/workspace/b.txt", "data": "aGk="},
    ),
    (
        "POST",
        "/v1/agents/environments/templates",
        {"name": "t", **{k: v for k, v in HOSTED.items() if k != "type"}},
    ),
    ("POST", "/v1/agents/environments/templates/{template_id}", {"name": "t2", "env": {"A": "b"}}),
    (
        "POST",
        "/v1/agents/automations",
        {"type": "once", "name": "n", "run_at": RUN_AT, "target": TARGET},
    ),
    (
        "POST",
        "/v1/agents/automations",
        {
            "type": "periodic",
            "name": "p",
            "expression": "0 * * * *",
            "timezone": "UTC",
            "target": TARGET,
        },
    ),
    ("POST", "/v1/agents/automations/{automation_id}", {"name": "m", "run_at": RUN_AT}),
    ("POST", "/v1/vaults", {"name": "v", "metadata": {"a": "b"}}),
    ("POST", "/v1/vaults/{vault_id}", {"name": "w", "metadata": {"a": "c"}}),
    (
        "POST",
        "/v1/vaults/{vault_id}/credentials",
        {
            "name": "c",
            "auth": {
                "type": "environment_variable",
                "secret_name": "TOKEN",
                "secret_value": "s3cret",
                "networking": {"type": "limited", "allowed_hosts": ["example.test"]},
            },
        },
    ),
    ("POST", "/core/v1/projects", {"name": "p"}),
    ("POST", "/core/v1/projects/{project_id}/api_keys", {"name": "k"}),
    ("POST", "/core/v1/devices", {"name": "d"}),
)


ROLES = "/core/v1/comms/roles"
CONTACT = "/api/v1/contacts/{contact_id}"

# The communication routes: (method, path, seed, credential), where the credential is
# `owner` (the project key) or `instance` (the calling instance's runtime token, with
# the protocol and primary-epoch headers).
COMMS_SEEDS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("POST", ROLES, {"name": "r", "agent_id": None}, "owner"),
    ("POST", ROLES + "/{role_id}/instances", {"name": "i"}, "owner"),
    (
        "POST",
        ROLES + "/{role_id}/primary",
        {"instance_id": "{instance_id}", "expected_epoch": 99},
        "owner",
    ),
    ("POST", ROLES + "/{role_id}/rotate-stream", {"expected_stream_id": "stream"}, "owner"),
    ("POST", "/api/v1/contacts", {"to_role_id": "{peer_role_id}", "message": "hi"}, "instance"),
    ("POST", CONTACT + "/reply", {"message": "hello"}, "instance"),
    ("POST", CONTACT + "/accept", {"accept": True}, "instance"),
    ("POST", CONTACT + "/claim", {"lease_id": "a" * 48, "through_seq": 1}, "instance"),
    ("POST", CONTACT + "/progress", {"through_seq": 1, "phase": "processing"}, "instance"),
    ("POST", "/api/v1/communication/receipts", {"event_seqs": [1], "persisted": True}, "instance"),
    (
        "PUT",
        "/api/v1/communication/receiver",
        {"mode": "polling", "handler_state": "configured", "enabled": True},
        "instance",
    ),
)
