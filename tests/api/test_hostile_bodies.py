"""The hand-written hostile-body generator (`tests.api.hostile`) over every route that
takes a JSON body: no answer is a 5xx, and on routes that start no background work a
rejected body leaves the database exactly as it was (the busy routes run last, so
work they start cannot be mistaken for a write by a rejected request)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from allinone.core.comms.limits import PROTOCOL_HEADER, PROTOCOL_VERSION
from tests.api import hostile
from tests.api.edge_client import Edge, resources
from tests.api.support import DatabaseWatch, core_key
from tests.conftest import API_KEY, start_server

# Accepted bodies here start work that keeps writing after the reply (turns, set-ups).
BACKGROUND = {
    "/v1/agents/sessions",
    "/v1/agents/sessions/{session_id}/events",
    "/v1/agents/environments",
}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    server = start_server(tmp_path_factory.mktemp("hostile") / "data")
    try:
        checked = Edge(server, core_key(server.data_dir), {})
        resources(checked)
        yield checked
    finally:
        server.stop()


def _filled(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value[1:-1] in ids and value == "{" + value[1:-1] + "}":
        return ids[value[1:-1]]
    if isinstance(value, dict):
        return {key: _filled(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, ids) for item in value]
    return value


def test_no_hostile_body_gets_a_5xx_or_a_write_when_rejected(target: Edge) -> None:
    seeds = sorted(hostile.SEEDS, key=lambda seed: seed[1] in BACKGROUND)
    failures: list[str] = []
    sent = 0
    watch = DatabaseWatch(target.server.data_dir)
    try:
        for method, template, seed in seeds:
            quiet = template not in BACKGROUND
            for description, body in hostile.mutations(_filled(seed, target.ids)):
                status, reply = target.send(method, template, body)
                sent += 1
                moved = watch.moved()
                if status >= 500:
                    failures.append(f"{status} {method} {template} {description}: {reply}")
                elif status >= 400 and quiet and moved:
                    failures.append(f"{method} {template} {description}: rejected but wrote")
    finally:
        watch.close()
    assert sent > 2000
    assert not failures, "\n".join(failures[:20])


def _comms(target: Edge) -> tuple[str, dict[str, str]]:
    """Two roles with one instance each (a role's first instance is its primary), and
    a contact from the first to the second: (the first instance's token, its headers)."""
    tokens = []
    for name in ("caller", "callee"):
        status, role = target.send(
            "POST", "/core/v1/comms/roles", _body({"name": name}), key=API_KEY
        )
        assert status == 200, role
        path = f"/core/v1/comms/roles/{role['id']}"
        status, instance = target.send(
            "POST", path + "/instances", _body({"name": name}), key=API_KEY
        )
        assert status == 200, instance
        target.ids[f"{name}_role_id"] = role["id"]
        target.ids[f"{name}_instance_id"] = instance["id"]
        tokens.append(instance["token"])
    target.ids.update(
        role_id=target.ids["caller_role_id"],
        instance_id=target.ids["caller_instance_id"],
        peer_role_id=target.ids["callee_role_id"],
    )
    headers = {PROTOCOL_HEADER: PROTOCOL_VERSION}
    status, me = target.send("GET", "/api/v1/me", b"", headers, key=tokens[0])
    assert status == 200, me
    headers["X-A2A-Primary-Epoch"] = str(me["primary_epoch"])
    opened = {"to_role_id": target.ids["peer_role_id"], "message": "hi"}
    status, contact = target.send(
        "POST", "/api/v1/contacts", _body(opened), {**headers, "Idempotency-Key": "k0"}, tokens[0]
    )
    assert status in (200, 201), contact
    target.ids["contact_id"] = contact["id"]
    return tokens[0], headers


def _body(value: dict[str, Any]) -> bytes:
    return hostile.encode(value)


def test_no_hostile_communication_body_gets_a_5xx(target: Edge) -> None:
    token, headers = _comms(target)
    failures: list[str] = []
    for method, template, seed, who in hostile.COMMS_SEEDS:
        key = API_KEY if who == "owner" else token
        sent_headers = {} if who == "owner" else headers
        for index, (description, body) in enumerate(hostile.mutations(_filled(seed, target.ids))):
            extra = {**sent_headers, "Idempotency-Key": f"hostile-{index}"}
            status, reply = target.send(method, template, body, extra, key)
            if status >= 500:
                failures.append(f"{status} {method} {template} {description}: {reply}")
    assert not failures, "\n".join(failures[:20])
