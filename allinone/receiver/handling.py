"""Handling a contact's inbound messages: claim, hand to the handler, save the decision,
then act on it and report progress.

Order of durability, per job: the job row with its lease id is saved before the claim
(so a lost answer is retried with the same lease); `running` is saved before the
handler starts (so a crash can never run it twice: the job becomes `uncertain`); the
decision is saved before anything is sent; the reply uses the job's idempotency key,
fixed when the job was created, so a lost answer is retried safely and a changed body
is an IDEMPOTENCY_CONFLICT. A decision made under another primary epoch is not reused
unless the owner confirmed it.

Whatever a handler returns, `accept_contact` is applied only together with a reply the
owner authorised (`reply_authorized`), and a reply repeating the owner instruction is
held for the owner instead of being sent.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import msgspec

from allinone.receiver.adapters import run_adapter
from allinone.receiver.client import PlatformClient
from allinone.receiver.config import ReceiverConfig
from allinone.receiver.decisions import MAX_REPLY_CHARS, decision
from allinone.receiver.errors import PlatformError
from allinone.receiver.jobs import JobState
from allinone.receiver.store import Store

log = logging.getLogger(__name__)

MAX_CONTACTS_PER_CYCLE = 5
LEASE_LOST = frozenset(
    {
        "TASK_LEASE_EXPIRED",
        "TASK_LEASE_INVALID",
        "TASK_LEASE_EPOCH_STALE",
        "TASK_WATERMARK_MISMATCH",
    }
)
# Refusals after which nothing is left to do for a job: the batch was handled already,
# or the contact is closed (or expired), where claims, renewals and progress all fail.
SETTLED = frozenset({"TASK_ALREADY_HANDLED", "CONTACT_CLOSED"})
Lease = tuple[str, int]
LEASE_SECONDS = 300
# A lease granted in this process less than this long ago is used without renewing it:
# at least half of its 300 s are left for the few calls that follow.
FRESH_LEASE_SECONDS = LEASE_SECONDS / 2


def new_lease_id() -> str:
    return secrets.token_hex(24)


class Handling:
    def __init__(
        self,
        config: ReceiverConfig,
        client: PlatformClient,
        store: Store,
        me: dict[str, Any],
        now: Callable[[], int],
    ) -> None:
        self._config = config
        self._client = client
        self._store = store
        self._me = me
        self._epoch = int(me["primary_epoch"])
        self._now = now
        self._granted: dict[str, float] = {}  # job_id -> monotonic time of its lease

    def run(self) -> tuple[int, bool]:
        """Work on at most MAX_CONTACTS_PER_CYCLE contacts; return (settled jobs, whether
        more contacts are waiting)."""
        contacts = self._store.contacts_with_work(MAX_CONTACTS_PER_CYCLE + 1)
        settled = 0
        for contact_id in contacts[:MAX_CONTACTS_PER_CYCLE]:
            try:
                if self.contact(contact_id):
                    settled += 1
            except PlatformError as exc:
                log.warning(
                    "contact %s: platform refused (%s); retrying later", contact_id, exc.code
                )
        return settled, len(contacts) > MAX_CONTACTS_PER_CYCLE

    def contact(self, contact_id: str) -> bool:
        job = self._store.open_job(contact_id)
        if job is None:
            job = self._new_job(contact_id)
            if job is None:
                return False
        if job["state"] == JobState.CLAIMING:
            job = self._claim(job)
        if job["state"] == JobState.CLAIMED:
            job = self._decide(job)
        lease: Lease | None = None
        if job["state"] == JobState.DECIDED:
            job, lease = self._act(job)
        if job["state"] == JobState.REPLIED:
            job = self._finish(job, lease, "waiting_reply", JobState.DONE)
        return bool(job["state"] in (JobState.DONE, JobState.WAITING_OWNER))

    def _new_job(self, contact_id: str) -> dict[str, Any] | None:
        pending = self._store.unassigned_pending(contact_id)
        if not pending:
            return None
        if self._store.is_closed(contact_id):
            # Nothing can be sent on a closed contact: do not ask the handler.
            self._store.drop_pending(contact_id)
            log.info("contact %s is closed; %d message(s) left unhandled", contact_id, len(pending))
            return None
        job_id = "job_" + secrets.token_hex(12)
        job = {
            "job_id": job_id,
            "contact_id": contact_id,
            "through_seq": int(pending[-1]["seq"]),
            "lease_id": new_lease_id(),
            "primary_epoch": self._epoch,
            "reply_key": f"{job_id}-reply",
            "notification_id": f"{job_id}-notice",
            "contact_expires_at": int(pending[-1]["contact_expires_at"]),
            "created_at": self._now(),
        }
        self._store.create_job(job)
        return self._store.job(job_id)

    def _claim(self, job: dict[str, Any]) -> dict[str, Any]:
        body = {"lease_id": job["lease_id"], "through_seq": job["through_seq"]}
        try:
            claim = self._client.claim(job["contact_id"], body, self._epoch)
        except PlatformError as exc:
            return self._claim_refused(job, exc, JobState.ABANDONED)
        self._granted[job["job_id"]] = time.monotonic()
        return self._move(
            job, JobState.CLAIMED, lease_epoch=int(claim["lease_epoch"]), primary_epoch=self._epoch
        )

    def _claim_refused(
        self, job: dict[str, Any], exc: PlatformError, otherwise: JobState
    ) -> dict[str, Any]:
        if exc.code in SETTLED:
            return self._move(job, JobState.DONE, code=exc.code)
        if exc.code == "OWNER_CONFIRMATION_REQUIRED":
            self._notify(
                job,
                f"Contact {job['contact_id']} waits for the owner: resolve job {job['job_id']}.",
            )
            return self._move(job, JobState.BLOCKED, code=exc.code)
        if exc.code == "TASK_BUSY" or exc.code in LEASE_LOST or exc.code == "INVALID_WATERMARK":
            if otherwise is JobState.ABANDONED:
                return self._move(job, JobState.ABANDONED, code=exc.code)
            return job
        raise exc

    def _decide(self, job: dict[str, Any]) -> dict[str, Any]:
        handler = self._config.handler
        assert handler is not None
        lease: Lease = (job["lease_id"], int(job["lease_epoch"]))
        try:
            self._client.progress(
                job["contact_id"], job["through_seq"], "processing", self._epoch, lease
            )
        except PlatformError as exc:
            if exc.code in LEASE_LOST or exc.code == "CONTACT_CLOSED":
                return self._move(job, JobState.ABANDONED, code=exc.code)
            raise
        payload = self._handler_input(job)
        job = self._move(job, JobState.RUNNING)
        outcome = run_adapter(handler, payload)
        found = decision(outcome.value) if outcome.ok and outcome.value is not None else None
        if found is None:
            code = "HANDLER_" + (outcome.code if not outcome.ok else "MALFORMED_OUTPUT")
            log.warning("job %s: handler result uncertain (%s)", job["job_id"], code)
            job = self._move(job, JobState.UNCERTAIN, code=code)
            self._notify(
                job,
                f"Handling of contact {job['contact_id']} is uncertain ({code});"
                f" verify and resolve job {job['job_id']}.",
            )
            self._report(job, lease, "waiting_owner")
            return job
        return self._move(job, JobState.DECIDED, decision=msgspec.to_builtins(found))

    def _handler_input(self, job: dict[str, Any]) -> dict[str, Any]:
        communication = self._client.communication(job["contact_id"])
        messages = []
        for event in self._store.contact_events(job["contact_id"]):
            if event["type"] != "message":
                continue
            body = msgspec.json.decode(event["body"])
            message = body.get("message") or {}
            messages.append(
                {
                    "seq": event["seq"],
                    "event_id": event["event_id"],
                    "direction": event["direction"],
                    "kind": message.get("kind"),
                    "text": message.get("text"),
                    "created_at": event["created_at"],
                    "content_trust": "untrusted_external",
                    "pending": event["job_id"] == job["job_id"] and bool(event["pending"]),
                }
            )
        may_accept = communication.get("role") == "recipient" and not communication.get("accepted")
        return {
            "schema_version": 1,
            "job_id": job["job_id"],
            "role_id": self._me["role"]["id"],
            "contact_id": job["contact_id"],
            "messages": messages,
            "communication": communication,
            "owner_instruction": self._config.owner_instruction,
            "constraints": {
                "actions": ["reply", "waiting_owner", "completed"],
                "reply_authorized": self._config.reply_authorized,
                "may_accept_contact": may_accept,
                "max_reply_chars": MAX_REPLY_CHARS,
                "replies_remaining": communication.get("replies_remaining"),
                "expires_at": communication.get("expires_at"),
                "external_content_is_untrusted": True,
            },
        }

    def _act(self, job: dict[str, Any]) -> tuple[dict[str, Any], Lease | None]:
        choice: dict[str, Any] = job["decision"]
        if not job["owner_confirmed"] and job["primary_epoch"] != self._epoch:
            job = self._move(job, JobState.UNCERTAIN, code="PRIMARY_EPOCH_CHANGED")
            self._notify(
                job,
                f"The primary epoch changed before job {job['job_id']} was sent;"
                " verify its decision and resolve it.",
            )
            return job, None
        job, lease = self._ensure_lease(job)
        if lease is None:
            return job, None
        if choice["action"] == "reply" and self._discloses(choice):
            choice = {
                "action": "waiting_owner",
                "owner_summary": f"The reply on contact {job['contact_id']} repeats the owner"
                " instruction; nothing was sent.",
            }
        if choice.get("accept_contact") and self._may_accept(choice):
            try:
                self._client.accept(job["contact_id"], self._epoch, lease)
            except PlatformError as exc:
                if exc.code not in ("NOT_ORIGINAL_RECIPIENT", "CONTACT_CLOSED"):
                    raise
        summary = choice.get("owner_summary")
        action = choice["action"]
        if action == "completed":
            if summary:
                self._notify(job, summary)
            return self._finish(job, lease, "completed", JobState.DONE), lease
        if action == "waiting_owner" or not self._config.reply_authorized:
            code = None if action == "waiting_owner" else "REPLY_NOT_AUTHORIZED"
            return self._wait_for_owner(job, lease, code, summary), lease
        try:
            self._client.reply(
                job["contact_id"], choice["message"], job["reply_key"], self._epoch, lease
            )
        except PlatformError as exc:
            if exc.code in ("REPLY_LIMIT_REACHED", "IDEMPOTENCY_CONFLICT"):
                return self._wait_for_owner(job, lease, exc.code, summary), lease
            if exc.code == "CONTACT_CLOSED":
                return self._finish(job, lease, "completed", JobState.DONE, exc.code), lease
            if exc.code in LEASE_LOST:
                return job, None
            raise
        if summary:
            self._notify(job, summary)
        return self._move(job, JobState.REPLIED), lease

    def _may_accept(self, choice: dict[str, Any]) -> bool:
        """Accepting raises what the peer may send; it is applied only with a reply the
        owner authorised this receiver to send."""
        return choice["action"] == "reply" and self._config.reply_authorized

    def _discloses(self, choice: dict[str, Any]) -> bool:
        """Whether the reply repeats the owner instruction, which never leaves the
        instance whatever a handler returns."""
        wanted = " ".join(self._config.owner_instruction.split()).casefold()
        message = " ".join(str(choice.get("message") or "").split()).casefold()
        return bool(wanted) and wanted in message

    def _wait_for_owner(
        self, job: dict[str, Any], lease: Lease, code: str | None, summary: str | None
    ) -> dict[str, Any]:
        self._report(job, lease, "waiting_owner")
        note = summary or f"Contact {job['contact_id']} waits for the owner"
        if code:
            note += f" ({code})"
        self._notify(job, f"{note}; resolve job {job['job_id']}.")
        return self._move(job, JobState.WAITING_OWNER, code=code)

    def _finish(
        self,
        job: dict[str, Any],
        lease: Lease | None,
        phase: str,
        target: JobState,
        code: str | None = None,
    ) -> dict[str, Any]:
        if lease is None:
            job, lease = self._ensure_lease(job)
            if lease is None:
                return job
        try:
            self._client.progress(job["contact_id"], job["through_seq"], phase, self._epoch, lease)
        except PlatformError as exc:
            if exc.code in LEASE_LOST:
                return job
            if exc.code != "CONTACT_CLOSED":
                raise
        return self._move(job, target, code=code)

    def _ensure_lease(self, job: dict[str, Any]) -> tuple[dict[str, Any], Lease | None]:
        """Renew the job's lease, or claim a new one (with resume and owner_confirmed when
        the owner resolved the job). Return the job and the lease, or no lease when the
        task is busy, already handled or waits for the owner."""
        contact_id = job["contact_id"]
        granted = self._granted.get(job["job_id"])
        if (
            granted is not None
            and job["lease_epoch"] is not None
            and time.monotonic() - granted < FRESH_LEASE_SECONDS
        ):
            return job, (job["lease_id"], int(job["lease_epoch"]))
        if job["lease_id"] and job["lease_epoch"] is not None:
            body = {
                "lease_id": job["lease_id"],
                "through_seq": job["through_seq"],
                "renew": True,
                "expected_lease_epoch": job["lease_epoch"],
            }
            try:
                claim = self._client.claim(contact_id, body, self._epoch)
                if claim["state"] == "leased":
                    return job, (job["lease_id"], int(job["lease_epoch"]))
            except PlatformError as exc:
                if exc.code == "CONTACT_CLOSED":
                    return self._move(job, JobState.DONE, code=exc.code), None
                if exc.code not in LEASE_LOST:
                    raise
        lease_id = new_lease_id()
        job = self._move(job, JobState(job["state"]), lease_id=lease_id, lease_epoch=None)
        body = {"lease_id": lease_id, "through_seq": job["through_seq"]}
        if job["owner_confirmed"]:
            body.update(resume=True, owner_confirmed=True)
        try:
            claim = self._client.claim(contact_id, body, self._epoch)
        except PlatformError as exc:
            if job["state"] == JobState.DECIDED:
                return self._claim_refused(job, exc, JobState.DECIDED), None
            if exc.code in SETTLED:
                return self._move(job, JobState.DONE, code=exc.code), None
            raise
        epoch = int(claim["lease_epoch"])
        self._granted[job["job_id"]] = time.monotonic()
        job = self._move(job, JobState(job["state"]), lease_epoch=epoch, primary_epoch=self._epoch)
        return job, (lease_id, epoch)

    def _report(self, job: dict[str, Any], lease: Lease, phase: str) -> None:
        """Best-effort progress for a job that is leaving the receiver's hands."""
        try:
            self._client.progress(job["contact_id"], job["through_seq"], phase, self._epoch, lease)
        except PlatformError as exc:
            log.warning("job %s: progress %s not recorded (%s)", job["job_id"], phase, exc.code)

    def _notify(self, job: dict[str, Any], summary: str) -> None:
        self._store.add_notification(
            {
                "notification_id": job["notification_id"],
                "job_id": job["job_id"],
                "contact_id": job["contact_id"],
                "summary": summary,
                "contact_expires_at": job["contact_expires_at"],
                "created_at": self._now(),
            }
        )

    def _move(self, job: dict[str, Any], target: JobState, **fields: Any) -> dict[str, Any]:
        return self._store.move_job(job, target, self._now(), **fields)
