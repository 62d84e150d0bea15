"""How the composition root seats a Core process among those sharing its database
(`allinone.core.cluster`): the membership, the signal channel, the in-process
Runtime's device, what a gone peer's turns go through, the start and stop of both, and
the housekeeping jobs that fire once across the processes."""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from allinone.core.cluster.membership import Membership
from allinone.core.cluster.signals import (
    Channel,
    LocalChannel,
    PostgresChannel,
    Signals,
    TurnSignals,
    relay_turns,
)
from allinone.core.gateway.registry import Registry
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.orchestrator import Orchestrator
from allinone.core.orchestration.recovery import Recovery
from allinone.core.orchestration.timers import Timers
from allinone.lifecycle import Lifecycle
from storage.database import Database
from storage.journal_prune import JournalPruner

if TYPE_CHECKING:
    from allinone.app import Parts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seat:
    membership: Membership
    signals: Signals


def seat(db: Database, ids: Ids, clock: Clock) -> tuple[Hub, Registry, Seat]:
    """The journal readers' hub, the Runtime connections' registry, and this process's
    seat: its membership (`shared` when other processes may use the database) and its
    signals, through which the hub's wake-ups are relayed."""
    hub, registry = Hub(), Registry()

    def devices() -> list[str]:
        return [c.device_id for c in registry if not c.closed.is_set()]

    shared = db.url is not None  # several processes share a PostgreSQL database
    membership = Membership(
        db, ids, clock, shared=shared, devices=devices, changes=lambda: registry.changed
    )
    signals = Signals(membership.process_id, signal_channel(db))
    hub.relay_through(signals.relay("session", hub.notify_here))
    return hub, registry, Seat(membership, signals)


def relay(seat: Seat, orchestrator: Orchestrator, recovery: Recovery) -> TurnSignals:
    """The orchestrator's signals, relayed to every process; a gone peer's turns are
    recovered by `recovery`, then the queue is woken."""
    relayed = relay_turns(
        seat.signals,
        orchestrator.wake,
        orchestrator.request_cancel,
        orchestrator.request_pause,
        orchestrator.input_admitted,
    )
    seat.membership.on_peer_lapsed = peer_recovery(recovery, relayed.wake)
    return relayed


def local_device(db: Database, default: str, sock: socket.socket) -> str:
    """The in-process Runtime's device id: `default` on an embedded database; with
    peers, one per host and port, so that each process's Runtime keeps its own
    credential (a start does not revoke a peer's)."""
    if db.url is None:
        return default
    return f"{default}-{socket.gethostname()}-{sock.getsockname()[1]}"


def signal_channel(db: Database) -> Channel:
    """How signals reach the other processes: PostgreSQL's notifications; nothing carries
    them between processes on one SQLite file (readers there wake on their own timers)."""
    if db.url is not None:
        return PostgresChannel(db.url)
    return LocalChannel()


def peer_recovery(
    recovery: Recovery, wake: Callable[[], None]
) -> Callable[[str], Awaitable[object]]:
    """A gone peer's running turns follow the crash rules; then the queue is woken, so
    the turns suspended for a re-claim are claimed by a process that can deliver them."""

    async def recover(process_id: str) -> None:
        await recovery.peer_lapsed(process_id)
        wake()

    return recover


async def join(life: Lifecycle, parts: Parts, request_stop: Callable[[], None]) -> None:
    """Record this process and start the signals before the orchestrator recovers and
    claims; their stops run after the orchestrator's (the row is closed last)."""
    await parts.seat.membership.join()
    life.on_stop("core process row", parts.seat.membership.leave)
    await parts.seat.signals.start()
    life.on_stop("signals", parts.seat.signals.close)
    parts.seat.membership.start(on_lapsed=request_stop)


ONCE: dict[str, Any] = {"coalesce": True, "max_instances": 1}


def add_periodic_jobs(parts: Parts, timers: Timers) -> None:
    """Housekeeping that runs while serving, each firing once across the Core processes
    that share the database; the scheduler's shutdown stops it. With peers, each process
    also follows the automations they changed."""
    jobs: list[tuple[str, float, Callable[[], Awaitable[object]]]] = [
        ("journal-prune", 60.0, JournalPruner(parts.db).run),
        (
            "lease-expiry",
            timers.lease_sweep_seconds,
            partial(parts.outcomes.expire_leases, parts.orchestrator.abandon),
        ),
        ("comms-retention", 600.0, parts.comms.sweep),
        ("data-retention", 3600.0, parts.retention.run),
    ]
    membership = parts.seat.membership
    for name, seconds, fn in jobs:
        once = membership.exclusive(name, seconds, fn)
        parts.scheduler.add_job(once, "interval", seconds=seconds, id=name, **ONCE)
    if membership.shared:
        resync = parts.automations.resync
        seconds = membership.timers.heartbeat_seconds
        parts.scheduler.add_job(resync, "interval", seconds=seconds, id="automations", **ONCE)
