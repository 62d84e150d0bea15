"""Contacts: opening, idempotent message writes, the reply limit, accept, close and the
communication view, against a real server."""

from __future__ import annotations

from tests.allinone.comms.comms_helpers import new_lease, pair
from tests.conftest import Server

SEVEN_DAYS = 7 * 24 * 3600


def test_a_retry_with_the_same_key_and_body_returns_the_first_result(server: Server) -> None:
    alice, bob = pair(server.base_url)
    first = alice.open(bob.role_id, "hello", key="open-1")
    assert first.status == 200 and "idempotent-replayed" not in first.headers
    again = alice.open(bob.role_id, "hello", key="open-1")
    assert again.status == 200 and again.body == first.body
    assert again.headers["idempotent-replayed"] == "true"
    changed = alice.open(bob.role_id, "hello, changed", key="open-1")
    assert changed.status == 409 and changed.code == "IDEMPOTENCY_CONFLICT"
    assert len(bob.inbound(first.body["contact_id"])) == 1  # one contact, one message

    contact = first.body["contact_id"]
    reply = bob.reply(contact, "hi back", key="reply-1")
    assert bob.reply(contact, "hi back", key="reply-1").body == reply.body
    assert bob.reply(contact, "other text", key="reply-1").code == "IDEMPOTENCY_CONFLICT"
    assert bob.communication(contact)["replies_used"] == 1


def test_message_writes_need_an_idempotency_key(server: Server) -> None:
    alice, bob = pair(server.base_url)
    answer = alice.post("/contacts", {"to_role_id": bob.role_id, "message": "x"})
    assert answer.status == 400 and answer.code == "IDEMPOTENCY_KEY_REQUIRED"


def test_six_replies_in_total_then_reply_limit_reached_and_accept_raises_it(
    server: Server,
) -> None:
    alice, bob = pair(server.base_url)
    contact = alice.open(bob.role_id, "opening").body["contact_id"]
    for turn in range(6):
        sender = bob if turn % 2 == 0 else alice
        assert sender.reply(contact, f"reply {turn + 1}").status == 200
    view = alice.communication(contact)
    assert (view["reply_limit"], view["replies_remaining"]) == (6, 0)
    seventh = alice.reply(contact, "reply 7", key="seventh")
    assert seventh.status == 409 and seventh.code == "REPLY_LIMIT_REACHED"
    # Only the original recipient may accept.
    refused = alice.post(f"/contacts/{contact}/accept", {"accept": True})
    assert refused.status == 403 and refused.code == "NOT_ORIGINAL_RECIPIENT"
    bad = bob.post(f"/contacts/{contact}/accept", {"accept": False})
    assert bad.status == 400
    accepted = bob.post(f"/contacts/{contact}/accept", {"accept": True})
    assert accepted.status == 200
    assert accepted.body["reply_limit"] == 60 and accepted.body["replies_remaining"] == 54
    assert accepted.body["expires_at"] == accepted.body["created_at"] + SEVEN_DAYS
    assert bob.post(f"/contacts/{contact}/accept", {"accept": True}).status == 200  # repeat
    assert alice.reply(contact, "reply 7", key="seventh").status == 200


def test_either_party_closes_and_a_closed_contact_refuses_writes(server: Server) -> None:
    alice, bob = pair(server.base_url)
    contact = alice.open(bob.role_id, "opening").body["contact_id"]
    closed = alice.post(f"/contacts/{contact}/close", {})
    assert closed.status == 200 and closed.body["state"] == "closed"
    assert closed.body["closed_by"] == "self"
    assert bob.communication(contact)["closed_by"] == "peer"
    assert alice.post(f"/contacts/{contact}/close", {}).status == 200  # repeat-safe
    assert bob.reply(contact, "too late").code == "CONTACT_CLOSED"
    assert bob.post(f"/contacts/{contact}/accept", {"accept": True}).code == "CONTACT_CLOSED"
    types = [e["type"] for e in bob.inbound(contact)]
    assert types == ["message", "contact.closed"]


def test_outsiders_see_nothing(server: Server) -> None:
    alice, bob = pair(server.base_url)
    carol, _ = pair(server.base_url)
    contact = alice.open(bob.role_id, "private").body["contact_id"]
    answer = carol.get(f"/contacts/{contact}/communication")
    assert answer.status == 404 and answer.code == "CONTACT_NOT_FOUND"
    assert carol.reply(contact, "intrude").status == 404
    assert carol.open(carol.role_id, "myself").status == 400
    assert carol.open("role_missing", "nobody").code == "ROLE_NOT_FOUND"


def test_the_view_shows_delivery_and_peer_progress_only_when_it_is_known(
    server: Server,
) -> None:
    alice, bob = pair(server.base_url)
    opened = alice.open(bob.role_id, "question")
    contact = opened.body["contact_id"]
    view = alice.communication(contact)
    assert view["expires_at"] == view["created_at"] + SEVEN_DAYS
    assert view["latest_outbound_received_at"] is None
    assert view["peer_phase"] == "unknown" and view["peer_owner_read"] == "unknown"
    assert isinstance(view["server_time"], int) and view["role"] == "opener"

    inbound = bob.inbound(contact)[0]
    assert bob.receipts([inbound["seq"]]).status == 200
    assert alice.communication(contact)["latest_outbound_received_at"] is not None

    lease_id = new_lease()
    claim = bob.claim(contact, lease_id, inbound["seq"]).body
    lease = (lease_id, claim["lease_epoch"])
    assert bob.progress(contact, inbound["seq"], "waiting_reply", lease).status == 200
    assert alice.communication(contact)["peer_phase"] == "waiting_reply"
    # A new outbound message the peer has not reported on makes its phase unknown again.
    assert alice.reply(contact, "follow-up").status == 200
    assert alice.communication(contact)["peer_phase"] == "unknown"
