"""Claims, leases and progress, against a real server."""

from __future__ import annotations

from tests.allinone.comms.comms_helpers import Inst, Owner, new_lease, pair
from tests.conftest import Server


def _opened(server: Server) -> tuple[Inst, Inst, str, int]:
    alice, bob = pair(server.base_url)
    contact = alice.open(bob.role_id, "please handle").body["contact_id"]
    return alice, bob, contact, bob.inbound(contact)[0]["seq"]


def _claimed(bob: Inst, contact: str, seq: int) -> tuple[str, int]:
    """`bob` claims the contact through `seq` with a new lease: (lease id, epoch)."""
    lease_id = new_lease()
    return lease_id, bob.claim(contact, lease_id, seq).body["lease_epoch"]


def test_claim_retry_renew_and_competition(server: Server) -> None:
    _, bob, contact, seq = _opened(server)
    lease_id = new_lease()
    first = bob.claim(contact, lease_id, seq)
    assert first.status == 200
    claim = first.body
    assert claim["state"] == "leased" and claim["lease_epoch"] == 1
    assert claim["lease_seconds"] == 300
    assert claim["lease_expires_at"] == claim["server_time"] + 300
    retry = bob.claim(contact, lease_id, seq)
    assert retry.status == 200 and retry.body["lease_epoch"] == 1
    renewed = bob.claim(contact, lease_id, seq, renew=True, expected_lease_epoch=1)
    assert renewed.status == 200 and renewed.body["lease_epoch"] == 1
    busy = bob.claim(contact, new_lease(), seq)
    assert busy.status == 409 and busy.code == "TASK_BUSY"
    stale = bob.claim(contact, lease_id, seq, renew=True, expected_lease_epoch=0)
    assert stale.status == 409 and stale.code == "TASK_LEASE_EPOCH_STALE"
    assert bob.claim(contact, "abc", seq).code == "INVALID_LEASE_ID"
    assert bob.claim(contact, new_lease(), seq + 1000).code == "INVALID_WATERMARK"


def test_a_primary_switch_voids_the_old_primarys_lease(server: Server) -> None:
    owner = Owner(server.base_url)
    alice, _ = pair(server.base_url, owner)
    role = owner.role("pair-of-instances")
    one_view, one_token = owner.instance(role["id"], "one")
    two_view, two_token = owner.instance(role["id"], "two")
    one = Inst(server.base_url, one_token, role["id"], one_view["id"])
    two = Inst(server.base_url, two_token, role["id"], two_view["id"])
    contact = alice.open(role["id"], "who takes it?").body["contact_id"]
    seq = one.inbound(contact)[0]["seq"]
    lease_id = new_lease()
    claim = one.claim(contact, lease_id, seq).body
    assert two.claim(contact, new_lease(), seq).code == "NOT_PRIMARY_INSTANCE"
    assert owner.set_primary(role["id"], two.instance_id, expected_epoch=1).status == 200
    # The old primary's lease no longer writes anything, and no longer blocks the new
    # primary: its claim takes the task at once with the next lease epoch.
    old = one.reply(contact, "late", lease=(lease_id, claim["lease_epoch"]))
    assert old.status == 403 and old.code == "NOT_PRIMARY_INSTANCE"
    taken = two.claim(contact, new_lease(), seq)
    assert taken.status == 200, taken.body
    assert taken.body["lease_epoch"] == claim["lease_epoch"] + 1
    busy = two.claim(contact, new_lease(), seq)
    assert busy.status == 409 and busy.code == "TASK_BUSY"


def test_once_claimed_writes_need_the_current_lease_and_epoch(server: Server) -> None:
    _, bob, contact, seq = _opened(server)
    lease_id = new_lease()
    epoch = bob.claim(contact, lease_id, seq).body["lease_epoch"]
    missing = bob.reply(contact, "no lease")
    assert missing.status == 428 and missing.code == "TASK_LEASE_REQUIRED"
    stale = bob.reply(contact, "stale", lease=(lease_id, epoch - 1))
    assert stale.status == 409 and stale.code == "TASK_LEASE_EPOCH_STALE"
    wrong = bob.reply(contact, "wrong", lease=(new_lease(), epoch))
    assert wrong.status == 409 and wrong.code == "TASK_LEASE_INVALID"
    for path, body in (
        (f"/contacts/{contact}/close", {}),
        (f"/contacts/{contact}/accept", {"accept": True}),
    ):
        assert bob.post(path, body).code == "TASK_LEASE_REQUIRED"
    assert bob.progress(contact, seq, "processing", None).code == "TASK_LEASE_REQUIRED"
    assert bob.reply(contact, "with lease", lease=(lease_id, epoch)).status == 200


def test_progress_reports_only_the_claimed_watermark_and_marks_it_handled(
    server: Server,
) -> None:
    alice, bob, contact, seq = _opened(server)
    lease = _claimed(bob, contact, seq)
    lease_id = lease[0]
    assert bob.progress(contact, seq, "processing", lease).status == 200
    other = bob.progress(contact, seq + 1, "processing", lease)
    assert other.status == 409 and other.code == "TASK_WATERMARK_MISMATCH"
    assert bob.progress(contact, seq, "sleeping", lease).status == 400
    done = bob.progress(contact, seq, "completed", lease)
    assert done.status == 200 and done.body["handled_seq"] == seq
    assert done.body["state"] == "done"
    assert bob.progress(contact, seq, "processing", lease).code == "ILLEGAL_TRANSITION"
    again = bob.claim(contact, new_lease(), seq)
    assert again.status == 409 and again.code == "TASK_ALREADY_HANDLED"
    # The next batch is claimed with a new lease, and the epoch moves on.
    alice.reply(contact, "another message")
    newer = bob.inbound(contact)[-1]["seq"]
    assert newer > seq
    next_claim = bob.claim(contact, new_lease(), newer)
    assert next_claim.status == 200 and next_claim.body["lease_epoch"] == 2
    reused = bob.claim(contact, lease_id, newer)
    assert reused.status == 409 and reused.code == "TASK_LEASE_REUSED"


def test_waiting_owner_is_left_only_with_owner_confirmation(server: Server) -> None:
    _, bob, contact, seq = _opened(server)
    lease = _claimed(bob, contact, seq)
    assert bob.progress(contact, seq, "waiting_owner", lease).status == 200
    blocked = bob.claim(contact, new_lease(), seq)
    assert blocked.status == 409 and blocked.code == "OWNER_CONFIRMATION_REQUIRED"
    half = bob.claim(contact, new_lease(), seq, resume=True)
    assert half.status == 400 and half.code == "OWNER_CONFIRMATION_REQUIRED"
    resumed_id = new_lease()
    resumed = bob.claim(contact, resumed_id, seq, resume=True, owner_confirmed=True)
    assert resumed.status == 200 and resumed.body["lease_epoch"] == 2
    assert bob.reply(contact, "old executor", lease=lease).code == "TASK_LEASE_EPOCH_STALE"
    new = (resumed_id, 2)
    assert bob.reply(contact, "resolved by the owner", lease=new).status == 200
    assert bob.progress(contact, seq, "waiting_reply", new).body["handled_seq"] == seq


def test_claims_and_progress_are_primary_business_writes(server: Server) -> None:
    _, bob, contact, seq = _opened(server)
    answer = bob.post(
        f"/contacts/{contact}/claim", {"lease_id": new_lease(), "through_seq": seq}, epoch=9
    )
    assert answer.code == "PRIMARY_EPOCH_MISMATCH"


def test_a_replayed_reply_needs_the_current_lease_like_a_new_one(server: Server) -> None:
    _, bob, contact, seq = _opened(server)
    first_id = new_lease()
    first = (first_id, bob.claim(contact, first_id, seq).body["lease_epoch"])
    sent = bob.reply(contact, "decision", key="dec-1", lease=first)
    assert sent.status == 200
    assert bob.progress(contact, seq, "failed", first).status == 200
    second_id = new_lease()
    resumed = bob.claim(contact, second_id, seq, resume=True, owner_confirmed=True)
    assert resumed.status == 200 and resumed.body["lease_epoch"] == first[1] + 1
    # The old executor cannot act, nor learn the message's fate, through its old key.
    stale = bob.reply(contact, "decision", key="dec-1", lease=first)
    assert stale.status == 409 and stale.code == "TASK_LEASE_EPOCH_STALE"
    missing = bob.reply(contact, "decision", key="dec-1")
    assert missing.status == 428 and missing.code == "TASK_LEASE_REQUIRED"
    forged = bob.reply(
        contact, "decision", key="dec-1", lease=(new_lease(), resumed.body["lease_epoch"])
    )
    assert forged.status == 409 and forged.code == "TASK_LEASE_INVALID"
    # The current executor, resuming the owner-confirmed decision, gets the first result.
    current = (second_id, resumed.body["lease_epoch"])
    again = bob.reply(contact, "decision", key="dec-1", lease=current)
    assert again.status == 200 and again.body == sent.body
    assert again.headers["idempotent-replayed"] == "true"
    assert bob.communication(contact)["replies_used"] == 1


def test_claim_renew_and_progress_on_a_closed_contact_get_contact_closed(
    server: Server,
) -> None:
    alice, bob, contact, seq = _opened(server)
    lease = _claimed(bob, contact, seq)
    lease_id = lease[0]
    assert bob.progress(contact, seq, "processing", lease).status == 200
    assert alice.post(f"/contacts/{contact}/close", {}).status == 200
    refused = [
        bob.progress(contact, seq, "completed", lease),
        bob.claim(contact, lease_id, seq, renew=True, expected_lease_epoch=lease[1]),
        bob.claim(contact, lease_id, seq),
        bob.claim(contact, new_lease(), seq),
    ]
    assert [(a.status, a.code) for a in refused] == [(409, "CONTACT_CLOSED")] * 4
    assert bob.communication(contact)["claim"]["phase"] == "processing"
    # The same holds when the claiming role closed the contact itself.
    _, bob2, contact2, seq2 = _opened(server)
    lease_id2 = new_lease()
    lease2 = (lease_id2, bob2.claim(contact2, lease_id2, seq2).body["lease_epoch"])
    assert bob2.post(f"/contacts/{contact2}/close", {}, lease=lease2).status == 200
    assert bob2.progress(contact2, seq2, "completed", lease2).code == "CONTACT_CLOSED"
