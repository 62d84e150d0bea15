"""The owner's conversation routes against a real server: acting as one of the
project's instances, listing and showing contacts, and contacts between roles of two
projects (allowed; each owner sees the contact, both sides' messages and only its own
roles' claims)."""

from __future__ import annotations

import secrets

from tests.allinone.comms.comms_helpers import Answer, Inst, Owner, call, new_lease
from tests.api.support import core_key
from tests.conftest import Server


def _project_key(server: Server, name: str) -> str:
    admin = {"Authorization": f"Bearer {core_key(server.data_dir)}"}
    project = call(
        server.base_url, "POST", "/core/v1/projects", bearer="", headers=admin, body={"name": name}
    )
    assert project.status == 200, project.body
    key = call(
        server.base_url,
        "POST",
        f"/core/v1/projects/{project.body['id']}/api_keys",
        bearer="",
        headers=admin,
        body={},
    )
    assert key.status == 200, key.body
    return str(key.body["key"])


def _as_instance(
    owner: Owner, path: str, body: dict[str, object], key: str | None = None
) -> Answer:
    headers = {} if key is None else {"Idempotency-Key": key}
    return call(
        owner.base_url,
        "POST",
        "/core/v1/comms/instances" + path,
        bearer=owner.key,
        body=body,
        headers=headers,
    )


def _side(server: Server, owner: Owner, name: str) -> Inst:
    role = owner.role(name)
    view, token = owner.instance(role["id"], f"{name}-1")
    return Inst(server.base_url, token, role["id"], view["id"])


def test_two_projects_talk_and_each_owner_sees_its_side(server: Server) -> None:
    ours, theirs = Owner(server.base_url), Owner(server.base_url, _project_key(server, "peer"))
    stranger = Owner(server.base_url, _project_key(server, "stranger"))
    support, buyer = _side(server, ours, "support"), _side(server, theirs, "buyer")

    key = secrets.token_hex(8)
    opened = _as_instance(
        theirs,
        f"/{buyer.instance_id}/contacts",
        {"to_role_id": support.role_id, "message": "Do you ship to Mars?"},
        key,
    )
    assert opened.status == 200, opened.body
    again = _as_instance(
        theirs,
        f"/{buyer.instance_id}/contacts",
        {"to_role_id": support.role_id, "message": "Do you ship to Mars?"},
        key,
    )
    assert again.body == opened.body and again.headers.get("idempotent-replayed") == "true"
    contact = opened.body["contact_id"]
    assert _as_instance(
        ours, f"/{buyer.instance_id}/contacts", {"to_role_id": support.role_id, "message": "x"}, "k"
    ).code == ("INSTANCE_NOT_FOUND")

    seq = support.inbound(contact)[0]["seq"]
    lease = new_lease()
    assert support.claim(contact, lease, seq).status == 200
    for owner, role in ((ours, support.role_id), (theirs, buyer.role_id)):
        listed = owner.call("GET", "/contacts").body["data"]
        assert [c["id"] for c in listed][:1] == [contact]
        shown = owner.call("GET", f"/contacts/{contact}").body
        assert shown["ours"] == [role]
        assert [(m["text"], m["status"]) for m in shown["messages"]] == [
            ("Do you ship to Mars?", "sent")
        ]
    assert [c["role_id"] for c in ours.call("GET", f"/contacts/{contact}").body["claims"]] == [
        support.role_id
    ]
    assert theirs.call("GET", f"/contacts/{contact}").body["claims"] == []
    hidden = stranger.call("GET", f"/contacts/{contact}")
    assert hidden.status == 404 and hidden.code == "CONTACT_NOT_FOUND"

    # Our executor holds a live lease: we close only with it. The peer never claimed,
    # so its owner closes at once, and the contact is closed for both.
    busy = _as_instance(ours, f"/{support.instance_id}/contacts/{contact}/close", {})
    assert busy.code == "TASK_LEASE_REQUIRED"
    closed = _as_instance(theirs, f"/{buyer.instance_id}/contacts/{contact}/close", {})
    assert closed.status == 200 and closed.body["state"] == "closed"
    assert ours.call("GET", f"/contacts/{contact}").body["state"] == "closed"
