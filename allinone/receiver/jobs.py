"""The lifecycles of the receiver's local records, each with its transitions in one place.

Job (one claimed batch of a contact's inbound messages):

    claiming -> claimed -> running -> decided -> replied -> done
    claimed  -> abandoned (the lease was lost before the handler started)
    claiming -> abandoned (TASK_BUSY: released, retried later) | done (already handled)
             | blocked (the platform wants the owner's confirmation)
    running  -> uncertain (timeout, crash, malformed output, or found running at start)
    decided  -> waiting_owner | uncertain | done
    waiting_owner, uncertain, blocked -> decided    only through `resolve`
                                                    (owner_confirmed; the handler is
                                                    never run again for the job)

Notification:

    pending -> delivering -> delivered | pending (not delivered; same id again)
                          | uncertain | undelivered (gave up after MAX_ATTEMPTS)
    uncertain, undelivered -> delivered | pending   only through `resolve`
"""

from __future__ import annotations

from enum import StrEnum


class IllegalJobTransition(Exception):
    def __init__(self, record: str, current: str, target: str) -> None:
        super().__init__(f"{record} cannot move from {current} to {target}")


class JobState(StrEnum):
    CLAIMING = "claiming"
    CLAIMED = "claimed"
    RUNNING = "running"
    DECIDED = "decided"
    REPLIED = "replied"
    DONE = "done"
    ABANDONED = "abandoned"
    WAITING_OWNER = "waiting_owner"
    UNCERTAIN = "uncertain"
    BLOCKED = "blocked"


JOB_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.CLAIMING: frozenset(
        {JobState.CLAIMED, JobState.ABANDONED, JobState.DONE, JobState.BLOCKED}
    ),
    JobState.CLAIMED: frozenset({JobState.RUNNING, JobState.ABANDONED}),
    JobState.RUNNING: frozenset({JobState.DECIDED, JobState.UNCERTAIN}),
    JobState.DECIDED: frozenset(
        {
            JobState.DECIDED,
            JobState.REPLIED,
            JobState.DONE,
            JobState.WAITING_OWNER,
            JobState.UNCERTAIN,
            JobState.BLOCKED,
        }
    ),
    JobState.REPLIED: frozenset({JobState.DONE}),
    JobState.DONE: frozenset(),
    JobState.ABANDONED: frozenset(),
    JobState.WAITING_OWNER: frozenset({JobState.DECIDED}),
    JobState.UNCERTAIN: frozenset({JobState.DECIDED}),
    JobState.BLOCKED: frozenset({JobState.DECIDED}),
}

# Jobs that hold their contact: no new job starts for it until they settle.
OPEN_JOBS = frozenset(
    {
        JobState.CLAIMING,
        JobState.CLAIMED,
        JobState.RUNNING,
        JobState.DECIDED,
        JobState.REPLIED,
        JobState.WAITING_OWNER,
        JobState.UNCERTAIN,
        JobState.BLOCKED,
    }
)
# Jobs only the owner can move on (`resolve`).
NEEDS_OWNER = frozenset({JobState.WAITING_OWNER, JobState.UNCERTAIN, JobState.BLOCKED})


def check_job(current: str, target: JobState) -> None:
    if target not in JOB_TRANSITIONS[JobState(current)]:
        raise IllegalJobTransition("job", current, target)


class NoticeState(StrEnum):
    PENDING = "pending"
    DELIVERING = "delivering"
    DELIVERED = "delivered"
    UNCERTAIN = "uncertain"
    UNDELIVERED = "undelivered"


NOTICE_TRANSITIONS: dict[NoticeState, frozenset[NoticeState]] = {
    NoticeState.PENDING: frozenset({NoticeState.DELIVERING, NoticeState.DELIVERED}),
    NoticeState.DELIVERING: frozenset(
        {
            NoticeState.DELIVERED,
            NoticeState.PENDING,
            NoticeState.UNCERTAIN,
            NoticeState.UNDELIVERED,
        }
    ),
    NoticeState.DELIVERED: frozenset({NoticeState.DELIVERED}),
    NoticeState.UNCERTAIN: frozenset({NoticeState.DELIVERED, NoticeState.PENDING}),
    NoticeState.UNDELIVERED: frozenset({NoticeState.DELIVERED, NoticeState.PENDING}),
}
MAX_NOTICE_ATTEMPTS = 5


def check_notice(current: str, target: NoticeState) -> None:
    if target not in NOTICE_TRANSITIONS[NoticeState(current)]:
        raise IllegalJobTransition("notification", current, target)
