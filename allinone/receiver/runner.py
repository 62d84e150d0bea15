"""Driving the receiver: one cycle (`once`), the resident loop (`run`) and `status`.

`run` is its own scheduler: it polls every `poll_interval_ms` (30 s by default), goes
again at once while a cycle reports more work, backs off exponentially after failures
(up to MAX_BACKOFF_SECONDS), and stops between cycles on SIGINT or SIGTERM. Do not put
`run` under another scheduler; the store's exclusive lock refuses a second process.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from allinone.receiver.client import Http, PlatformClient
from allinone.receiver.config import Loaded
from allinone.receiver.cycle import CycleReport, Receiver
from allinone.receiver.errors import Halted, RemoteError, StoreError
from allinone.receiver.jobs import JobState
from allinone.receiver.store import Store

log = logging.getLogger(__name__)
MAX_BACKOFF_SECONDS = 600.0


def client_for(loaded: Loaded) -> PlatformClient:
    return PlatformClient(Http(loaded.config.origin, loaded.token))


@contextmanager
def opened(loaded: Loaded, fault: str | None = None) -> Iterator[Receiver]:
    """Take the store's lock, recover interrupted adapters, yield a Receiver."""
    store = Store.open(loaded.store_path, loaded.lock_path)
    try:
        receiver = Receiver(loaded, client_for(loaded), store, fault=fault)
        receiver.recover()
        yield receiver
    finally:
        store.close()


def once(loaded: Loaded, fault: str | None = None) -> CycleReport:
    with opened(loaded, fault) as receiver:
        return receiver.cycle()


def check(loaded: Loaded) -> dict[str, Any]:
    with opened(loaded) as receiver:
        return receiver.self_check()


def run(loaded: Loaded, stop: threading.Event, fault: str | None = None) -> None:
    interval = loaded.config.poll_interval_ms / 1000
    with opened(loaded, fault) as receiver, _stop_on_signals(stop):
        if not loaded.config.enabled:
            receiver.cycle()  # reports enabled: false and does no local work
            return
        failures = 0
        while not stop.is_set():
            more = False
            try:
                more = receiver.cycle().more
                failures = 0
            except Halted:
                raise
            except (RemoteError, StoreError) as exc:
                failures += 1
                log.warning("receive cycle failed (%s); backing off", type(exc).__name__)
            if more:
                continue
            delay = interval if failures == 0 else min(interval * 2**failures, MAX_BACKOFF_SECONDS)
            stop.wait(delay)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handle(signum: int, frame: Any) -> None:
        stop.set()

    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def status(loaded: Loaded) -> dict[str, Any]:
    """Local state from the store (read-only, no lock) and, when reachable, the platform's
    live view with its server_time. The local part is a cache, labelled as such."""
    config = loaded.config
    result: dict[str, Any] = {
        "config": str(loaded.path),
        "enabled": config.enabled,
        "authorized": {
            "receive": config.receive_authorized,
            "dispatch": config.dispatch_authorized,
            "reply": config.reply_authorized,
            "notify": config.notify_authorized,
        },
        "handler_configured": config.handler is not None,
        "notifier_configured": config.notifier is not None,
    }
    store = Store.peek(loaded.store_path)
    if store is None:
        result["local"] = None
    else:
        try:
            keys = (
                "role_id",
                "instance_id",
                "primary_epoch",
                "is_primary",
                "stream_id",
                "next_after",
                "history_gap_detected_at",
                "stream_changed_at",
                "cursor_reset_at",
                "orphaned_events",
                "halted",
                "last_cycle_at",
                "me_checked_at",
            )
            local: dict[str, Any] = {key: store.meta(key) for key in keys}
            local.update(store.counts())
            local["attention"] = [
                {
                    "job_id": j["job_id"],
                    "contact_id": j["contact_id"],
                    "state": j["state"],
                    "code": j["code"],
                }
                for j in store.jobs_in(ATTENTION)
            ]
            local["cached"] = True
            result["local"] = local
        finally:
            store.close()
    client = client_for(loaded)
    try:
        result["platform"] = {"me": client.me(), "receiver": client.receiver_status()}
    except RemoteError as exc:
        result["platform"] = {"error": getattr(exc, "code", type(exc).__name__)}
    return result


ATTENTION = ("waiting_owner", "uncertain", "blocked")


def jobs(loaded: Loaded, *, every: bool = False) -> dict[str, Any]:
    """The jobs that await the owner (or every job), from the local store, read-only:
    each with its id (what resolution.json names), contact, state, code, the decision
    the handler made, and the summary the owner was or will be notified with."""
    store = Store.peek(loaded.store_path)
    if store is None:
        return {"object": "list", "data": [], "cached": True}
    try:
        states = tuple(s.value for s in JobState) if every else ATTENTION
        data = []
        for job in store.jobs_in(states):
            notice = store.notification(job["notification_id"])
            data.append(
                {
                    "job_id": job["job_id"],
                    "contact_id": job["contact_id"],
                    "state": job["state"],
                    "code": job["code"],
                    "through_seq": job["through_seq"],
                    "decision": job["decision"],
                    "owner_summary": None if notice is None else notice["summary"],
                    "created_at": job["created_at"],
                    "updated_at": job["updated_at"],
                }
            )
    finally:
        store.close()
    return {"object": "list", "data": data, "cached": True}
