"""Roles, instances, runtime tokens and the primary epoch, against a real server."""

from __future__ import annotations

import sqlite3

from openai import OpenAI

from tests.allinone.comms.comms_helpers import PROTOCOL, Inst, Owner, call, pair
from tests.api.support import core_key
from tests.conftest import API_KEY, Server


def test_me_reports_role_instance_primary_and_epoch(server: Server) -> None:
    alice, _ = pair(server.base_url)
    me = alice.me()
    assert me["protocol"] == "1.4"
    assert me["role"]["id"] == alice.role_id
    assert me["instance"]["id"] == alice.instance_id
    assert me["primary_instance_id"] == alice.instance_id and me["is_primary"] is True
    assert me["primary_epoch"] == 1
    assert isinstance(me["server_time"], int) and me["stream_id"].startswith("cstream_")


def test_every_request_must_declare_protocol_1_4(server: Server) -> None:
    alice, _ = pair(server.base_url)
    for headers in ({}, {"X-A2A-Protocol": "1.3"}):
        answer = call(server.base_url, "GET", "/api/v1/me", bearer=alice.token, headers=headers)
        assert answer.status == 400
        assert answer.code == "PROTOCOL_VERSION_UNSUPPORTED"
        assert "1.4" in answer.body["error"]["message"]


def test_unknown_tokens_and_project_keys_are_not_runtime_credentials(server: Server) -> None:
    for bearer in ("cbr_" + "0" * 64, API_KEY):
        answer = call(server.base_url, "GET", "/api/v1/me", bearer=bearer, headers=PROTOCOL)
        assert answer.status == 401 and answer.code == "UNAUTHENTICATED"


def test_writes_need_the_current_primary_epoch(server: Server) -> None:
    alice, bob = pair(server.base_url)
    body = {"to_role_id": bob.role_id, "message": "hi"}
    missing = call(
        server.base_url,
        "POST",
        "/api/v1/contacts",
        bearer=alice.token,
        body=body,
        headers={**PROTOCOL, "Idempotency-Key": "k1"},
    )
    assert missing.status == 428 and missing.code == "PRIMARY_EPOCH_REQUIRED"
    stale = alice.post("/contacts", body, epoch=7, key="k1")
    assert stale.status == 409 and stale.code == "PRIMARY_EPOCH_MISMATCH"
    assert alice.open(bob.role_id, "hi", key="k1").status == 200


def test_switching_primary_is_an_owner_action_that_increments_the_epoch(server: Server) -> None:
    owner = Owner(server.base_url)
    role = owner.role("switch")
    first_view, first_token = owner.instance(role["id"], "one")
    second_view, second_token = owner.instance(role["id"], "two")
    first = Inst(server.base_url, first_token, role["id"], first_view["id"])
    second = Inst(server.base_url, second_token, role["id"], second_view["id"])
    assert first_view["is_primary"] and not second_view["is_primary"]
    _, peer = pair(server.base_url)
    refused = second.open(peer.role_id, "from the secondary")
    assert refused.status == 403 and refused.code == "NOT_PRIMARY_INSTANCE"

    lost = owner.set_primary(role["id"], second.instance_id, expected_epoch=5)
    assert lost.status == 409 and lost.code == "PRIMARY_EPOCH_MISMATCH"
    switched = owner.set_primary(role["id"], second.instance_id, expected_epoch=1)
    assert switched.status == 200
    assert switched.body["primary_instance_id"] == second.instance_id
    assert switched.body["primary_epoch"] == 2
    assert second.me()["is_primary"] and not first.me()["is_primary"]
    assert second.open(peer.role_id, "now primary").status == 200
    assert first.open(peer.role_id, "no longer").code == "NOT_PRIMARY_INSTANCE"
    # A stale epoch is refused before anything else: the old primary must re-read /me.
    assert (
        first.post("/contacts", {"to_role_id": peer.role_id, "message": "x"}, epoch=1, key="k").code
        == "PRIMARY_EPOCH_MISMATCH"
    )


def test_a_saved_agent_may_own_one_role(server: Server) -> None:
    with OpenAI(base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=0) as sdk:
        agent_id = sdk.beta.agents.create(model="scripted").id
    owner = Owner(server.base_url)
    role = owner.role("agent-role", agent_id=agent_id)
    assert role["agent_id"] == agent_id
    assert owner.call("GET", f"/roles/{role['id']}").body == role
    again = owner.call("POST", "/roles", {"name": "again", "agent_id": agent_id})
    assert again.status == 409 and again.code == "AGENT_HAS_ROLE"
    missing = owner.call("POST", "/roles", {"name": "ghost", "agent_id": "agent_missing"})
    assert missing.status == 404 and missing.code == "AGENT_NOT_FOUND"


def test_owner_routes_need_a_project_key(server: Server) -> None:
    answer = Owner(server.base_url, key="wrong").call("GET", "/roles")
    assert answer.status == 401
    listed = Owner(server.base_url).call("GET", "/roles")
    assert listed.status == 200 and listed.body["object"] == "list"


def test_runtime_tokens_are_shown_once_and_stored_as_digests(server: Server) -> None:
    owner = Owner(server.base_url)
    role = owner.role("digest")
    _, token = owner.instance(role["id"], "one")
    listed = owner.call("GET", f"/roles/{role['id']}/instances").body["data"]
    assert all("token" not in row for row in listed)
    conn = sqlite3.connect(server.data_dir / "corebox.db")
    digests = [r[0] for r in conn.execute("SELECT token_digest FROM comms_instances")]
    conn.close()
    assert token not in digests
    raw = b"".join(
        p.read_bytes() for p in server.data_dir.iterdir() if p.name.startswith("corebox.db")
    )
    assert token.encode() not in raw


def test_an_archived_projects_roles_neither_authenticate_nor_take_contacts(
    server: Server,
) -> None:
    core = core_key(server.data_dir)
    made = call(server.base_url, "POST", "/core/v1/projects", bearer=core, body={"name": "gone"})
    project_id = made.body["id"]
    path = f"/core/v1/projects/{project_id}/api_keys"
    key = call(server.base_url, "POST", path, bearer=core, body={}).body["key"]
    owner = Owner(server.base_url, key=key)
    role = owner.role("carol")
    view, token = owner.instance(role["id"], "carol-1")
    carol = Inst(server.base_url, token, role["id"], view["id"])
    alice, _ = pair(server.base_url)
    contact = alice.open(carol.role_id, "before the archive").body["contact_id"]
    epoch = carol.me()["primary_epoch"]
    archive = f"/core/v1/projects/{project_id}/archive"
    assert call(server.base_url, "POST", archive, bearer=core).status == 200
    # Its runtime tokens are refused like an unknown one, reads and writes alike.
    receiver = {"mode": "polling", "handler_state": "configured", "enabled": True}
    refused = [
        carol.get("/me"),
        carol.events(),
        carol.get(f"/contacts/{contact}/communication"),
        carol.post(f"/contacts/{contact}/reply", {"message": "late"}, epoch=epoch, key="k1"),
        carol.post("/communication/receiver", receiver, epoch=epoch, method="PUT"),
        carol.post(
            "/contacts", {"to_role_id": alice.role_id, "message": "x"}, epoch=epoch, key="k2"
        ),
    ]
    assert [(a.status, a.code) for a in refused] == [(401, "UNAUTHENTICATED")] * 6
    # Its roles take no new contact: the answer is that of a role that never existed.
    to_archived = alice.open(carol.role_id, "anyone there?")
    to_missing = alice.open("role_missing", "anyone there?")
    assert (to_archived.status, to_archived.code) == (404, "ROLE_NOT_FOUND")
    assert (to_missing.status, to_missing.code) == (404, "ROLE_NOT_FOUND")
