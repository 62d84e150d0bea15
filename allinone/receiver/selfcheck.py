"""`corebox receiver check`: the receiver's self-check, before it is trusted with mail.

It checks the configuration and its privacy (loading it does), asks the platform who
this token is (GET /me: role, instance, whether it is the primary, the protocol), then
hands the handler one synthetic inbound message and the notifier one synthetic
notification, exactly as a cycle would, and verifies their answers strictly. Nothing is
sent to any contact: the synthetic job names no real contact, says
`reply_authorized: false`, and its decision is only inspected.

Only when the handler gave a valid decision and the notifier confirmed delivery is the
handler recorded as verified (with a digest of its configuration, so changing the
handler's command, arguments or working directory needs a new check) and reported to
the platform as `verified_reported`; later cycles keep reporting that while the digest
matches. Anything else reports `configured` (or `unsupported` without a dispatchable
handler) and the result says which step failed, with a safe status code.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

import msgspec

from allinone.receiver.adapters import run_adapter
from allinone.receiver.config import CommandConfig, ReceiverConfig
from allinone.receiver.decisions import MAX_REPLY_CHARS, decision, notifier_answer

SYNTHETIC_TEXT = "Receiver self-check: a synthetic inbound message. Nothing will be sent."
VERIFIED_KEY = "handler_verified"


def handler_digest(config: ReceiverConfig) -> str | None:
    if config.handler is None:
        return None
    encoded = json.dumps(msgspec.to_builtins(config.handler), sort_keys=True).encode()
    return hashlib.sha256(encoded).hexdigest()


def synthetic_job(config: ReceiverConfig, me: dict[str, Any], tag: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "job_id": f"check_{tag}",
        "role_id": me["role"]["id"],
        "contact_id": f"selfcheck_{tag}",
        "messages": [
            {
                "seq": 0,
                "event_id": f"selfcheck_{tag}",
                "direction": "inbound",
                "kind": "opening",
                "text": SYNTHETIC_TEXT,
                "created_at": me["server_time"],
                "content_trust": "untrusted_external",
                "pending": True,
            }
        ],
        "communication": {"synthetic": True},
        "owner_instruction": config.owner_instruction,
        "constraints": {
            "actions": ["reply", "waiting_owner", "completed"],
            "reply_authorized": False,
            "may_accept_contact": False,
            "max_reply_chars": MAX_REPLY_CHARS,
            "replies_remaining": 0,
            "expires_at": None,
            "external_content_is_untrusted": True,
            "synthetic": True,
        },
    }


def check_handler(config: ReceiverConfig, me: dict[str, Any], tag: str) -> dict[str, Any]:
    if config.handler is None:
        return {"state": "not_configured"}
    outcome = run_adapter(config.handler, synthetic_job(config, me, tag))
    found = decision(outcome.value) if outcome.ok and outcome.value is not None else None
    if found is None:
        code = "HANDLER_" + (outcome.code if not outcome.ok else "MALFORMED_OUTPUT")
        return {"state": "failed", "code": code}
    return {"state": "verified", "action": found.action}


def check_notifier(notifier: CommandConfig | None, tag: str) -> dict[str, Any]:
    if notifier is None:
        return {"state": "not_configured"}
    notification_id = f"check_{tag}-notice"
    outcome = run_adapter(
        notifier,
        {
            "schema_version": 1,
            "notification_id": notification_id,
            "summary": "Receiver self-check: this synthetic notification reached you.",
            "contact_id": f"selfcheck_{tag}",
        },
    )
    answer = notifier_answer(outcome.value) if outcome.ok and outcome.value else None
    if answer is None or answer.notification_id != notification_id:
        code = outcome.code if not outcome.ok else "MALFORMED_OUTPUT"
        return {"state": "failed", "code": f"NOTIFIER_{code}"}
    if not answer.delivered:
        return {"state": "failed", "code": "NOT_DELIVERED"}
    return {"state": "delivered", "notification_id": notification_id}


def run_checks(config: ReceiverConfig, me: dict[str, Any]) -> dict[str, Any]:
    """Both probes, with fresh synthetic ids; `ok` only when both passed."""
    tag = secrets.token_hex(8)
    handler = check_handler(config, me, tag)
    notifier = check_notifier(config.notifier, tag)
    return {
        "handler": handler,
        "notifier": notifier,
        "ok": handler["state"] == "verified" and notifier["state"] == "delivered",
    }
