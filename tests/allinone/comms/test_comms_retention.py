"""Time-dependent rules with an injected clock: 7-day expiry and retention, 300 s
leases, 120 s receiver freshness. The platform's real components run against a real
SQLite file; only the clock is a test implementation of the Clock interface."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from allinone.core.comms.errors import CommsError
from allinone.core.comms.identities import Caller
from allinone.core.comms.leases import LeaseHeaders
from allinone.core.comms.models import (
    Claim,
    InstanceCreate,
    OpenContact,
    Progress,
    ReceiverReport,
    Reply,
    RoleCreate,
)
from allinone.core.comms.service import Comms
from allinone.core.ids import Clock, Ids
from storage import tenancy
from storage.database import Database, Tx

T = TypeVar("T")
DAY = 24 * 3600


class ManualClock(Clock):
    def __init__(self, start: int = 1_800_000_000) -> None:
        self.at = start

    def now(self) -> int:
        return self.at

    def now_ms(self) -> int:
        return self.at * 1000


def lease(n: int) -> str:
    return f"{n:048x}"


async def _world(path: Path, clock: ManualClock) -> tuple[Database, Comms, Caller, Caller]:
    db = await Database.open(path)
    ids = Ids(clock)

    async def project(tx: Tx) -> None:
        await tenancy.insert_project(tx, "proj_test", "test", clock.now())

    await db.write(project)
    comms = Comms(db, ids, clock)
    callers = []
    for name in ("alice", "bob"):
        role = await comms.identities.create_role("proj_test", RoleCreate(name=name))
        instance = await comms.identities.create_instance(
            "proj_test", role["id"], InstanceCreate(name=name)
        )
        callers.append(Caller(instance["id"], role["id"], 1))
    return db, comms, callers[0], callers[1]


def run(
    tmp_path: Path, scenario: Callable[[Comms, Caller, Caller, ManualClock], Awaitable[T]]
) -> T:
    async def main() -> T:
        clock = ManualClock()
        db, comms, alice, bob = await _world(tmp_path / "comms.db", clock)
        try:
            return await scenario(comms, alice, bob, clock)
        finally:
            await db.close()

    return asyncio.run(main())


async def _code(call: Awaitable[Any]) -> str:
    with pytest.raises(CommsError) as caught:
        await call
    return caught.value.code


def test_leases_last_300_seconds(tmp_path: Path) -> None:
    async def scenario(comms: Comms, alice: Caller, bob: Caller, clock: ManualClock) -> None:
        opened, _ = await comms.contacts.open(alice, OpenContact(bob.role_id, "hi"), "k")
        contact = opened["contact_id"]
        granted = await comms.claims.claim(bob, contact, Claim(lease(1), 1))
        assert granted["lease_expires_at"] == clock.now() + 300
        clock.at += 299
        assert await _code(comms.claims.claim(bob, contact, Claim(lease(2), 1))) == "TASK_BUSY"
        clock.at += 1
        expired = Claim(lease(1), 1, renew=True, expected_lease_epoch=1)
        assert await _code(comms.claims.claim(bob, contact, expired)) == "TASK_LEASE_EXPIRED"
        # What the contact says of the lease is the truth too: nobody holds it.
        assert (await comms.contacts.communication(bob, contact))["claim"]["state"] == "expired"
        stale_write = comms.contacts.reply(
            bob, contact, Reply("late"), "r1", LeaseHeaders(lease(1), 1)
        )
        assert await _code(stale_write) == "TASK_LEASE_EXPIRED"
        fresh = await comms.claims.claim(bob, contact, Claim(lease(2), 1))
        assert fresh["lease_epoch"] == 2
        assert (await comms.contacts.communication(bob, contact))["claim"]["state"] == "leased"
        await comms.contacts.reply(bob, contact, Reply("on time"), "r2", LeaseHeaders(lease(2), 2))

    run(tmp_path, scenario)


def test_a_role_whose_lease_expired_can_still_close_the_contact(tmp_path: Path) -> None:
    async def scenario(comms: Comms, alice: Caller, bob: Caller, clock: ManualClock) -> None:
        opened, _ = await comms.contacts.open(alice, OpenContact(bob.role_id, "hi"), "k")
        contact = opened["contact_id"]
        await comms.claims.claim(bob, contact, Claim(lease(1), 1))
        held = LeaseHeaders(lease(1), 1)
        await comms.claims.progress(bob, contact, Progress(1, "processing"), held)
        # While the lease is live, closing needs it.
        without = comms.contacts.close(bob, contact, LeaseHeaders())
        assert await _code(without) == "TASK_LEASE_REQUIRED"
        await comms.claims.progress(bob, contact, Progress(1, "completed"), held)
        clock.at += 300
        # Everything handled, the lease expired: no new claim is possible, and the
        # expired lease, or none, still closes the contact.
        again = comms.claims.claim(bob, contact, Claim(lease(2), 1))
        assert await _code(again) == "TASK_ALREADY_HANDLED"
        closed = await comms.contacts.close(bob, contact, held)
        assert closed["state"] == "closed" and closed["closed_by"] == "self"
        assert (await comms.contacts.close(bob, contact, LeaseHeaders()))["state"] == "closed"

    run(tmp_path, scenario)


def test_receiver_reports_go_stale_after_120_seconds(tmp_path: Path) -> None:
    async def scenario(comms: Comms, alice: Caller, bob: Caller, clock: ManualClock) -> None:
        await comms.receivers.report(alice, ReceiverReport("polling", "configured", True))
        clock.at += 120
        assert (await comms.receivers.status(alice))["fresh"] is True
        clock.at += 1
        assert (await comms.receivers.status(alice))["fresh"] is False

    run(tmp_path, scenario)


def test_contacts_expire_after_7_days_and_retention_leaves_a_history_gap(
    tmp_path: Path,
) -> None:
    async def scenario(comms: Comms, alice: Caller, bob: Caller, clock: ManualClock) -> None:
        old, _ = await comms.contacts.open(alice, OpenContact(bob.role_id, "old"), "k1")
        clock.at += 1 * DAY
        new, _ = await comms.contacts.open(alice, OpenContact(bob.role_id, "new"), "k2")
        clock.at += 6 * DAY - 1
        page = await comms.events.read(bob, 0, 100, None)
        assert [e["contact_id"] for e in page["items"]] == [old["contact_id"], new["contact_id"]]
        clock.at += 1  # the old contact is now exactly 7 days old
        page = await comms.events.read(bob, 0, 100, None)
        assert [e["contact_id"] for e in page["items"]] == [new["contact_id"]]
        assert page["history_gap"] is True
        view = await comms.contacts.communication(bob, old["contact_id"])
        assert view["state"] == "expired"
        late = comms.contacts.reply(bob, old["contact_id"], Reply("late"), "r", LeaseHeaders())
        assert await _code(late) == "CONTACT_CLOSED"

        assert await comms.retention.sweep() == 1
        gone = comms.contacts.communication(bob, old["contact_id"])
        assert await _code(gone) == "CONTACT_NOT_FOUND"
        page = await comms.events.read(bob, 0, 100, None)
        assert page["history_gap"] is True and len(page["items"]) == 1
        after_gap = await comms.events.read(bob, 1, 100, page["stream_id"])
        assert after_gap["history_gap"] is False
        # The idempotency record went with the contact: the key is free again.
        again, replayed = await comms.contacts.open(alice, OpenContact(bob.role_id, "x"), "k1")
        assert not replayed and again["contact_id"] != old["contact_id"]
        assert await comms.retention.sweep() == 0

    run(tmp_path, scenario)


def test_accept_keeps_the_original_expiry(tmp_path: Path) -> None:
    async def scenario(comms: Comms, alice: Caller, bob: Caller, clock: ManualClock) -> None:
        opened, _ = await comms.contacts.open(alice, OpenContact(bob.role_id, "hi"), "k")
        created = clock.now()
        clock.at += 3 * DAY
        view = await comms.contacts.accept(bob, opened["contact_id"], LeaseHeaders())
        assert view["reply_limit"] == 60 and view["expires_at"] == created + 7 * DAY
        progress = comms.claims.progress(
            bob, opened["contact_id"], Progress(1, "completed"), LeaseHeaders()
        )
        assert await _code(progress) == "TASK_LEASE_REQUIRED"

    run(tmp_path, scenario)
