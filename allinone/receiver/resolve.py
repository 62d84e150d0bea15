"""`resolve`: apply the owner's verified result to a job that waits for the owner.

The owner writes a private resolution.json (mode 0600):
`{"owner_confirmed": true, "job_id": ..., "result": <a handler decision>,
"notification_delivered": <bool>}`. Resolving saves the decision as owner-confirmed and
settles the job's notification (delivered, or pending again for redelivery under its
original id) in one local transaction. It calls neither the handler nor the platform;
the next `once` sends the decision with the job's original idempotency key (and claims
with resume and owner_confirmed when the platform's task waits for the owner).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from allinone.receiver.config import check_private
from allinone.receiver.decisions import Resolution
from allinone.receiver.errors import ConfigError, ResolutionError
from allinone.receiver.jobs import NEEDS_OWNER, JobState, NoticeState
from allinone.receiver.store import Store


def read_resolution(path: Path) -> Resolution:
    try:
        check_private(path, directory=False)
    except ConfigError as exc:
        raise ResolutionError(str(exc)) from exc
    try:
        return msgspec.json.decode(path.read_bytes(), type=Resolution)
    except (OSError, msgspec.DecodeError, ValueError) as exc:
        raise ResolutionError(f"{path}: {exc}") from exc


def resolve(store: Store, resolution: Resolution, now: int) -> dict[str, Any]:
    job = store.job(resolution.job_id)
    if job is None:
        raise ResolutionError(f"no job {resolution.job_id} in this receiver's store")
    if JobState(job["state"]) not in NEEDS_OWNER:
        raise ResolutionError(
            f"job {job['job_id']} is {job['state']}; only waiting_owner, uncertain or blocked"
            " jobs can be resolved"
        )
    store.move_job(
        job,
        JobState.DECIDED,
        now,
        decision=msgspec.to_builtins(resolution.result),
        owner_confirmed=1,
        code=None,
    )
    notice = store.notification(job["notification_id"])
    notice_state = None
    if notice is not None:
        target = (
            NoticeState.DELIVERED if resolution.notification_delivered else (NoticeState.PENDING)
        )
        if notice["state"] != target and notice["state"] != NoticeState.DELIVERED:
            store.move_notification(notice, target, now, "OWNER_RESOLVED")
        notice_state = (
            target.value
            if notice["state"] != NoticeState.DELIVERED
            else (NoticeState.DELIVERED.value)
        )
    return {
        "job_id": job["job_id"],
        "contact_id": job["contact_id"],
        "state": JobState.DECIDED.value,
        "notification": notice_state,
        "next": "run `corebox receiver once` to send the resolved decision",
    }
