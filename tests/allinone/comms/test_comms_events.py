"""The event stream, receipts and receiver self-reports, against a real server."""

from __future__ import annotations

from tests.allinone.comms.comms_helpers import Inst, Owner, pair
from tests.conftest import Server


def test_events_page_with_a_server_cursor_and_stable_ids(server: Server) -> None:
    alice, bob = pair(server.base_url)
    contacts = [alice.open(bob.role_id, f"message {n}").body["contact_id"] for n in range(3)]
    first = bob.events(after=0, limit=2).body
    assert [e["seq"] for e in first["items"]] == [1, 2]
    assert first["has_more"] is True and first["next_after"] == 2
    assert first["history_gap"] is False and isinstance(first["server_time"], int)
    rest = bob.events(after=first["next_after"], stream_id=first["stream_id"]).body
    assert [e["seq"] for e in rest["items"]] == [3] and rest["has_more"] is False
    assert rest["next_after"] == 3
    items = first["items"] + rest["items"]
    assert [e["contact_id"] for e in items] == contacts
    for event in items:
        assert event["direction"] == "inbound" and event["type"] == "message"
        assert event["stream_id"] == first["stream_id"]
        assert event["message"]["content_trust"] == "untrusted_external"
        assert event["peer_role_id"] == alice.role_id
    again = bob.events(after=0).body["items"]
    assert [e["event_id"] for e in again] == [e["event_id"] for e in items]
    # Only this role's events: the opener sees its own outbound copies, the peer nothing else.
    assert {e["direction"] for e in alice.events().body["items"]} == {"outbound"}
    idle = bob.events(after=3, stream_id=first["stream_id"]).body
    assert idle["items"] == [] and idle["next_after"] == 3
    # An integer is written as one: not `1_0`, `+2` or ` 2` (each of which `int` reads).
    for query in (
        {"limit": "1_0"},
        {"limit": "+2"},
        {"after": " 2"},
        {"limit": "two"},
        {"after": "9" * 5000},  # past what `int` reads from text
    ):
        refused = bob.get("/communication/events", query)
        assert (refused.status, refused.code) == (400, "INVALID_REQUEST"), (query, refused)


def test_cursor_reset_required_and_stream_changed(server: Server) -> None:
    alice, bob = pair(server.base_url)
    alice.open(bob.role_id, "one")
    stream = bob.events().body["stream_id"]
    beyond = bob.events(after=99, stream_id=stream)
    assert beyond.status == 409 and beyond.code == "CURSOR_RESET_REQUIRED"
    assert bob.events(after=1).code == "STREAM_ID_REQUIRED"

    owner = Owner(server.base_url)
    rotated = owner.call(
        "POST", f"/roles/{bob.role_id}/rotate-stream", {"expected_stream_id": stream}
    )
    assert rotated.status == 200 and rotated.body["stream_id"] != stream
    changed = bob.events(after=1, stream_id=stream)
    assert changed.status == 409 and changed.code == "STREAM_CHANGED"
    replay = bob.events(after=0).body
    assert replay["stream_id"] == rotated.body["stream_id"]
    assert [e["seq"] for e in replay["items"]] == [1]  # seqs are never reused
    lost = owner.call("POST", f"/roles/{bob.role_id}/rotate-stream", {"expected_stream_id": stream})
    assert lost.code == "STREAM_CHANGED"


def test_receipts_are_inbound_only_repeat_safe_and_per_instance(server: Server) -> None:
    owner = Owner(server.base_url)
    alice, _ = pair(server.base_url, owner)
    role = owner.role("two-instances")
    one_view, one_token = owner.instance(role["id"], "one")
    two_view, two_token = owner.instance(role["id"], "two")
    one = Inst(server.base_url, one_token, role["id"], one_view["id"])
    two = Inst(server.base_url, two_token, role["id"], two_view["id"])
    contact = alice.open(role["id"], "hello").body["contact_id"]
    seq = one.inbound(contact)[0]["seq"]

    first = two.receipts([seq])
    assert first.status == 200 and first.body["acknowledged"] == [seq]
    assert first.body["cursor"] == seq
    assert two.receipts([seq]).status == 200  # repeat-safe
    assert one.me()["instance"]["cursor"] == 0  # another instance's cursor does not move
    assert two.me()["instance"]["cursor"] == seq
    assert len(one.events().body["items"]) == 1  # no event was created by the receipt

    outbound = next(e for e in alice.events().body["items"] if e["contact_id"] == contact)
    refused = alice.receipts([outbound["seq"]])
    assert refused.status == 400 and refused.code == "RECEIPT_NOT_INBOUND"
    unknown = two.receipts([999])
    assert unknown.status == 400 and unknown.code == "UNKNOWN_EVENT_SEQ"
    not_persisted = two.post("/communication/receipts", {"event_seqs": [seq], "persisted": False})
    assert not_persisted.code == "RECEIPT_NOT_PERSISTED"


def test_receiver_self_report_is_fresh_only_when_enabled(server: Server) -> None:
    alice, _ = pair(server.base_url)
    before = alice.get("/communication/receiver").body
    assert before["fresh"] is False and before["reported_at"] is None
    body = {"mode": "polling", "handler_state": "configured", "enabled": True}
    reported = alice.post("/communication/receiver", body, method="PUT")
    assert reported.status == 200 and reported.body["fresh"] is True
    status = alice.get("/communication/receiver").body
    assert status["handler_state"] == "configured" and status["fresh"] is True
    assert status["fresh_seconds"] == 120 and status["self_reported"] is True
    body["enabled"] = False
    assert alice.post("/communication/receiver", body, method="PUT").body["fresh"] is False
    assert alice.get("/communication/receiver").body["enabled"] is False
    bad = alice.post("/communication/receiver", {**body, "handler_state": "alive"}, method="PUT")
    assert bad.status == 400
