"""Protocol 1.4 rules checked from outside with raw HTTP, where the other comms tests
leave a gap: receipts that name their stream and event ids, which writes a secondary
instance may make, idempotency keys shared across message endpoints, and renewals that
carry a stale lease epoch. Every refusal leaves the platform as it was."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.allinone.comms.comms_helpers import PROTOCOL, Inst, Owner, new_lease, pair
from tests.api.support import unchanged
from tests.conftest import Server


def _opened(server: Server) -> tuple[Inst, Inst, str, int, str]:
    """alice opens a contact to bob: (alice, bob, contact id, bob's inbound seq, its
    event id)."""
    alice, bob = pair(server.base_url)
    contact_id = alice.open(bob.role_id, "hello").body["contact_id"]
    event = bob.inbound(contact_id)[0]
    return alice, bob, contact_id, event["seq"], event["event_id"]


def test_a_receipt_naming_its_stream_and_events_is_checked_against_them(
    server: Server,
) -> None:
    _, bob, _, seq, event_id = _opened(server)
    stream_id = bob.events().body["stream_id"]
    for body, code in (
        ({"stream_id": "cstream_elsewhere"}, "STREAM_CHANGED"),
        ({"event_ids": ["cevt_someone_else"]}, "EVENT_MISMATCH"),
        ({"event_ids": [event_id, event_id]}, "INVALID_REQUEST"),
    ):
        with unchanged(server.data_dir):
            refused = bob.post(
                "/communication/receipts", {"event_seqs": [seq], "persisted": True, **body}
            )
        assert refused.status in (400, 409) and refused.code == code, (body, refused.body)
    assert bob.me()["instance"]["cursor"] == 0
    named = bob.post(
        "/communication/receipts",
        {"event_seqs": [seq], "persisted": True, "stream_id": stream_id, "event_ids": [event_id]},
    )
    assert named.status == 200 and named.body["acknowledged"] == [seq]
    assert bob.me()["instance"]["cursor"] == seq


def test_a_secondary_instance_reads_and_receipts_but_never_handles(server: Server) -> None:
    """Each instance has its own cursor and may report its receiver; claims, replies,
    accept and close are the primary's, even with the current primary epoch."""
    owner = Owner(server.base_url)
    _, bob, contact_id, seq, _ = _opened(server)
    second, token = owner.instance(bob.role_id, "bob-2")
    standby = Inst(server.base_url, token, bob.role_id, second["id"])
    assert standby.me()["is_primary"] is False
    assert [e["seq"] for e in standby.inbound(contact_id)] == [seq]
    assert standby.receipts([seq]).status == 200
    assert standby.me()["instance"]["cursor"] == seq and bob.me()["instance"]["cursor"] == 0
    report = {"mode": "polling", "handler_state": "configured", "enabled": True}
    assert standby.post("/communication/receiver", report, method="PUT").status == 200
    for path, body in (
        (f"/contacts/{contact_id}/claim", {"lease_id": new_lease(), "through_seq": seq}),
        (f"/contacts/{contact_id}/accept", {"accept": True}),
        (f"/contacts/{contact_id}/close", {}),
    ):
        with unchanged(server.data_dir):
            refused = standby.post(path, body)
        assert (refused.status, refused.code) == (403, "NOT_PRIMARY_INSTANCE"), path
    with unchanged(server.data_dir):
        refused = standby.reply(contact_id, "from the standby")
    assert (refused.status, refused.code) == (403, "NOT_PRIMARY_INSTANCE")


def test_an_idempotency_key_names_one_request_across_message_endpoints(
    server: Server,
) -> None:
    alice, bob = pair(server.base_url)
    opened = alice.open(bob.role_id, "hello", key="shared-key")
    contact_id = opened.body["contact_id"]
    with unchanged(server.data_dir):
        reused = alice.reply(contact_id, "hello", key="shared-key")
    assert (reused.status, reused.code) == (409, "IDEMPOTENCY_CONFLICT")
    again = alice.open(bob.role_id, "hello", key="shared-key")
    assert again.status == 200 and again.body["id"] == opened.body["id"]
    # Keys belong to the role that sent them: the peer may use the same string.
    lease = new_lease()
    seq = bob.inbound(contact_id)[0]["seq"]
    epoch = bob.claim(contact_id, lease, seq).body["lease_epoch"]
    assert bob.reply(contact_id, "hi", key="shared-key", lease=(lease, epoch)).status == 200


def test_a_renewal_or_write_with_a_stale_lease_epoch_changes_nothing(server: Server) -> None:
    _, bob, contact_id, seq, _ = _opened(server)
    lease = new_lease()
    claimed = bob.claim(contact_id, lease, seq).body
    epoch = claimed["lease_epoch"]
    with unchanged(server.data_dir):
        stale = bob.claim(contact_id, lease, seq, renew=True, expected_lease_epoch=epoch + 1)
        assert (stale.status, stale.code) == (409, "TASK_LEASE_EPOCH_STALE")
        wrong = bob.reply(contact_id, "x", lease=(lease, epoch + 1))
        assert (wrong.status, wrong.code) == (409, "TASK_LEASE_EPOCH_STALE")
        other = bob.reply(contact_id, "x", lease=(new_lease(), epoch))
        assert (other.status, other.code) == (409, "TASK_LEASE_INVALID")
        renew_other = bob.claim(
            contact_id, new_lease(), seq, renew=True, expected_lease_epoch=epoch
        )
        assert (renew_other.status, renew_other.code) == (409, "TASK_LEASE_INVALID")
    renewed = bob.claim(contact_id, lease, seq, renew=True, expected_lease_epoch=epoch).body
    assert renewed["lease_epoch"] == epoch and renewed["state"] == "leased"


def test_a_message_body_that_repeats_a_key_is_refused(server: Server) -> None:
    """`{"message": "a", "message": "b"}` has no single meaning (parsers disagree on which
    copy wins), so it is refused before anything is sent."""
    alice, bob = pair(server.base_url)
    headers = {
        **PROTOCOL,
        "X-A2A-Primary-Epoch": str(alice.me()["primary_epoch"]),
        "Idempotency-Key": "dup-key",
        "Content-Type": "application/json",
    }
    role = json.dumps(bob.role_id)
    body = f'{{"to_role_id": {role}, "message": "a", "message": "b"}}'.encode()
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/contacts", data=body, method="POST", headers=headers
    )
    request.add_header("Authorization", f"Bearer {alice.token}")
    with unchanged(server.data_dir), pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30).close()
    with refused.value as error:
        assert error.code == 400
        assert json.loads(error.read())["error"]["code"] == "INVALID_REQUEST"
    assert bob.events().body["items"] == []
