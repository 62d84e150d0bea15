"""Owner notifications: recorded once per job (deduplicated by notification_id) and
handed to the notifier adapter when notifying is authorised and configured.

Only a notifier answer `{"schema_version":1,"notification_id":<same>,"delivered":true}`
counts as delivered; exit code 0 alone does not. Without an authorised notifier the
notification stays pending for the owner's report. A timeout, crash or malformed answer
leaves it uncertain and it is not retried; `delivered: false` keeps it pending under the
same id (the notifier deduplicates) for at most MAX_NOTICE_ATTEMPTS attempts.
"""

from __future__ import annotations

import logging

from allinone.receiver.adapters import run_adapter
from allinone.receiver.config import ReceiverConfig
from allinone.receiver.decisions import notifier_answer
from allinone.receiver.jobs import MAX_NOTICE_ATTEMPTS, NoticeState
from allinone.receiver.store import Store

log = logging.getLogger(__name__)
MAX_NOTICES_PER_CYCLE = 5


def deliver_pending(config: ReceiverConfig, store: Store, now: int) -> int:
    """Try pending notifications; return how many were delivered."""
    notifier = config.notifier
    if not config.notify_authorized or notifier is None:
        return 0
    delivered = 0
    for notice in store.notifications_in((NoticeState.PENDING.value,))[:MAX_NOTICES_PER_CYCLE]:
        store.move_notification(notice, NoticeState.DELIVERING, now)
        notice = {**notice, "state": NoticeState.DELIVERING.value}
        outcome = run_adapter(
            notifier,
            {
                "schema_version": 1,
                "notification_id": notice["notification_id"],
                "summary": notice["summary"],
                "contact_id": notice["contact_id"],
            },
        )
        answer = notifier_answer(outcome.value) if outcome.ok and outcome.value else None
        if (
            not outcome.ok
            or answer is None
            or (answer.notification_id != notice["notification_id"])
        ):
            code = outcome.code if not outcome.ok else "MALFORMED_OUTPUT"
            store.move_notification(notice, NoticeState.UNCERTAIN, now, f"NOTIFIER_{code}")
            log.warning("notifier result uncertain for %s (%s)", notice["notification_id"], code)
        elif answer.delivered:
            store.move_notification(notice, NoticeState.DELIVERED, now)
            delivered += 1
        elif notice["attempts"] + 1 >= MAX_NOTICE_ATTEMPTS:
            store.move_notification(notice, NoticeState.UNDELIVERED, now, "NOT_DELIVERED")
        else:
            store.move_notification(notice, NoticeState.PENDING, now, "NOT_DELIVERED")
    return delivered
