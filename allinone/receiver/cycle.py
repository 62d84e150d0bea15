"""One receive cycle: check the platform, report the receiver, fetch and persist events,
send receipts, handle up to five contacts, notify, and clean up expired local data.

Receiving: each page of events is saved with its pending-handling state and
`next_after` in one local transaction, and only then receipted; receipts that did not
go out (a crash, a lost answer) are sent at the start of the next cycle, naming the
stream they belong to. On CURSOR_RESET_REQUIRED the role is confirmed (GET /me) and the
stream replayed from 0, deduplicated by event_id; on STREAM_CHANGED (from the events or
the leftover receipts) handling stops for this cycle while the new stream is replayed
the same way, and what the new stream did not replay is kept as orphaned history,
never receipted. A seq that now names another event of the same stream, or leftover
receipts the platform no longer knows under an unchanged stream (a restore without a
stream rotation), halt the cycle: the reason is kept in the store's meta (`halted`)
for `status` until a cycle succeeds.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allinone.receiver.client import PROTOCOL_VERSION, PlatformClient
from allinone.receiver.config import Loaded
from allinone.receiver.errors import Halted, PlatformError, RemoteError
from allinone.receiver.handling import Handling
from allinone.receiver.jobs import JobState, NoticeState
from allinone.receiver.notices import deliver_pending
from allinone.receiver.selfcheck import VERIFIED_KEY, handler_digest, run_checks
from allinone.receiver.store import Store

log = logging.getLogger(__name__)

PAGE_LIMIT = 100
MAX_PAGES_PER_CYCLE = 50
FAULT_CRASH_BEFORE_RECEIPT = "crash_before_receipt"


@dataclass
class CycleReport:
    enabled: bool = True
    received: int = 0
    receipted: int = 0
    settled: int = 0
    notified: int = 0
    more: bool = False
    reconciling: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Receiver:
    def __init__(
        self,
        loaded: Loaded,
        client: PlatformClient,
        store: Store,
        *,
        fault: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._loaded = loaded
        self._config = loaded.config
        self._client = client
        self._store = store
        self._fault = fault
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock())

    def recover(self) -> None:
        """After a start: a job found running, or a notification found being delivered,
        had its adapter interrupted; its outcome is unknown and is never re-run."""
        now = self._now()
        for job in self._store.jobs_in((JobState.RUNNING.value,)):
            self._store.move_job(job, JobState.UNCERTAIN, now, code="HANDLER_INTERRUPTED")
        for notice in self._store.notifications_in((NoticeState.DELIVERING.value,)):
            self._store.move_notification(
                notice, NoticeState.UNCERTAIN, now, "NOTIFIER_INTERRUPTED"
            )

    def handler_state(self) -> str:
        """`verified_reported` while the handler last passed `receiver check` with its
        present configuration; `configured` otherwise; `unsupported` without one."""
        if self._config.handler is None or not self._config.dispatch_authorized:
            return "unsupported"
        verified = self._store.meta(VERIFIED_KEY) or {}
        if verified.get("digest") == handler_digest(self._config):
            return "verified_reported"
        return "configured"

    def self_check(self) -> dict[str, Any]:
        """`corebox receiver check` (selfcheck.py): GET /me, then the synthetic probes;
        record and report the handler's state."""
        me = self._check_platform()
        result = run_checks(self._config, me)
        digest = handler_digest(self._config) if result["ok"] else None
        self._store.put_meta(
            {VERIFIED_KEY: None if digest is None else {"digest": digest, "at": self._now()}}
        )
        state = self.handler_state()
        if self._config.enabled:
            self._client.report_receiver("polling", state, True, int(me["primary_epoch"]))
        return {
            "platform": {
                "role_id": me["role"]["id"],
                "instance_id": me["instance"]["id"],
                "is_primary": me["is_primary"],
                "primary_epoch": me["primary_epoch"],
                "protocol": me["protocol"],
                "server_time": me["server_time"],
            },
            **result,
            "handler_state": state,
        }

    def cycle(self, mode: str = "polling") -> CycleReport:
        """One cycle; a halt is recorded for `status` before it is raised."""
        try:
            return self._cycle(mode)
        except Halted as exc:
            self._store.put_meta(
                {"halted": {"code": exc.code, "reason": str(exc), "at": self._now()}}
            )
            raise

    def _cycle(self, mode: str) -> CycleReport:
        report = CycleReport(enabled=self._config.enabled)
        if not self._config.enabled:
            self._disable()
            return report
        me = self._check_platform()
        epoch = int(me["primary_epoch"])
        self._client.report_receiver(mode, self.handler_state(), True, epoch)
        if self._config.receive_authorized:
            report.receipted += self._send_leftover_receipts(epoch)
            self._receive(epoch, report)
        if (
            self._config.dispatch_authorized
            and self._config.handler is not None
            and me["is_primary"]
            and not report.reconciling
        ):
            settled, more = Handling(self._config, self._client, self._store, me, self._now).run()
            report.settled = settled
            report.more = report.more or more
        report.notified = deliver_pending(self._config, self._store, self._now())
        self._store.purge_expired(int(me["server_time"]))
        self._store.put_meta({"last_cycle_at": self._now(), "last_error": None, "halted": None})
        return report

    def _disable(self) -> None:
        """Disabled: do no local work; tell the platform when it can be reached."""
        try:
            me = self._client.me()
            self._client.report_receiver(
                "polling", self.handler_state(), False, int(me["primary_epoch"])
            )
        except RemoteError as exc:
            log.warning("could not report the receiver disabled (%s)", type(exc).__name__)

    def _check_platform(self) -> dict[str, Any]:
        me = self._client.me()
        if me.get("protocol") != PROTOCOL_VERSION:
            raise Halted("PROTOCOL_MISMATCH", "the platform speaks another protocol version")
        known = self._store.meta("role_id")
        if known is not None and known != me["role"]["id"]:
            raise Halted("ROLE_MISMATCH", "the token now belongs to another role")
        self._store.put_meta(
            {
                "role_id": me["role"]["id"],
                "instance_id": me["instance"]["id"],
                "primary_epoch": me["primary_epoch"],
                "is_primary": me["is_primary"],
                "me_checked_at": me["server_time"],
            }
        )
        return me

    def _send_leftover_receipts(self, epoch: int) -> int:
        """Receipts a crash or a lost answer kept back. A changed stream is left to the
        replay that follows; seqs the unchanged stream no longer knows mean the platform
        went back in time under the same stream, which the receiver cannot reconcile."""
        try:
            return self._send_receipts(epoch)
        except PlatformError as exc:
            if exc.code == "STREAM_CHANGED":
                log.warning("leftover receipts belong to a changed stream; reconciling first")
                return 0
            if exc.code in ("UNKNOWN_EVENT_SEQ", "EVENT_MISMATCH"):
                raise Halted(
                    "STREAM_ROLLED_BACK",
                    "the platform no longer knows events this receiver saved, under the same"
                    " stream id: it was restored without a stream rotation. The operator"
                    " rotates the role's stream (corebox comms stream rotate); the next"
                    " cycle then reconciles",
                ) from exc
            raise

    def _send_receipts(self, epoch: int) -> int:
        sent = 0
        while True:
            saved = self._store.unreceipted(PAGE_LIMIT)
            if not saved:
                return sent
            answer = self._client.receipts(saved, epoch, self._store.meta("stream_id"))
            done = [*answer.get("acknowledged", []), *answer.get("ignored", [])]
            self._store.mark_receipted([int(seq) for seq in done])
            sent += len(done)
            if len(done) < len(saved):
                return sent

    def _receive(self, epoch: int, report: CycleReport) -> None:
        stream_id: str | None = self._store.meta("stream_id")
        after = int(self._store.meta("next_after", 0))
        for _ in range(MAX_PAGES_PER_CYCLE):
            try:
                page = self._client.events(after, PAGE_LIMIT, stream_id if after else None)
            except PlatformError as exc:
                if exc.code == "CURSOR_RESET_REQUIRED":
                    log.warning("cursor reset required; replaying from 0 by event_id")
                    self._store.put_meta({"next_after": 0, "cursor_reset_at": self._now()})
                    after = 0
                    continue
                if exc.code == "STREAM_CHANGED":
                    log.warning("event stream changed; reconciling from 0 before handling")
                    self._store.put_meta(
                        {"stream_id": None, "next_after": 0, "stream_changed_at": self._now()}
                    )
                    stream_id, after, report.reconciling = None, 0, True
                    continue
                raise
            report.received += self._store.save_page(
                page["items"],
                page["stream_id"],
                int(page["next_after"]),
                bool(page["history_gap"]),
                self._now(),
            )
            if self._fault == FAULT_CRASH_BEFORE_RECEIPT and page["items"]:
                os.kill(os.getpid(), signal.SIGKILL)  # seeded hook: die before the receipt
            report.receipted += self._send_receipts(epoch)
            stream_id, after = page["stream_id"], int(page["next_after"])
            if not page["has_more"]:
                if report.reconciling:
                    orphaned = self._store.settle_orphans()
                    log.warning("stream reconciled; %d saved event(s) it no longer has", orphaned)
                return
        report.more = True
