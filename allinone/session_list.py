"""`corebox sessions list`: a project's newest sessions (`--limit`, 20 by default), the
most recently active first, against a running server with a project key (the rules of
`sessions pause|resume|cancel`).

    corebox sessions list [--limit N] [--json]

One line per session: its id, status, last activity (UTC), agent and name. The status of
a session in progress whose turn a pause holds is that turn's (`pausing`, `paused`,
`resuming`), as the console shows it. A session is
named as the console names it: by its `metadata.title`, else by its first message's
first line that is not a directive (else its first line), at most 72 characters; a
session with no message yet has no name (`-`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any, TextIO

from allinone import run_control
from allinone.admin import reporting, request_json, url_path
from allinone.run_control import BETA

LONGEST_NAME = 72
# Where a pause holds a turn that has not ended, by its phase (its status says in_progress).
HELD = {
    "pause_requested": "pausing",
    "pausing": "pausing",
    "paused": "paused",
    "resuming": "resuming",
}
ENDED = ("completed", "failed", "cancelled")


def add_commands(actions: Any) -> None:
    """Add `list` to the `sessions` group's subparsers."""
    parser = actions.add_parser(
        "list",
        parents=[run_control.project_options()],
        help="list the project's newest sessions, most recently active first, named",
    )
    parser.add_argument(
        "--limit", type=_limit, default=20, help="how many of the newest, 1 to 100 (default 20)"
    )
    parser.set_defaults(group_main=reporting(run))


def _limit(raw: str) -> int:
    number = int(raw) if raw.isdigit() else 0
    if not 1 <= number <= 100:
        raise argparse.ArgumentTypeError("must be a whole number from 1 to 100")
    return number


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Print the sessions; raise AdminError when the server cannot be asked or refuses."""
    client = run_control.client_for(args, dict(os.environ))

    def get(path: str) -> Any:
        return request_json(f"{client.base_url}{path}", client.api_key, "GET", None, BETA)

    sessions = get(f"/v1/agents/sessions?limit={args.limit}&order=desc")["data"]
    sessions.sort(key=lambda s: s.get("last_active_at") or 0, reverse=True)
    if args.json:
        print(json.dumps(sessions, indent=2), file=out)
        return
    for session in sessions:
        title = (session.get("metadata") or {}).get("title")
        if not title:
            items = url_path("/v1/agents/sessions/{}/items", session["id"])
            first = get(f"{items}?limit=1&order=asc")["data"]
            title = headline(first[0]) if first else ""
        status = _status(session, get)
        agent = session.get("agent") or {}
        active = session.get("last_active_at") or session["created_at"]
        print(
            f"{session['id']}\t{status}"
            f"\t{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(active))}"
            f"\t{agent.get('name') or agent.get('model') or '-'}\t{title or '-'}",
            file=out,
        )


def _status(session: dict[str, Any], get: Callable[[str], Any]) -> str:
    """The session's status, or where a pause holds its latest turn while in progress."""
    status = str(session["status"])
    if status != "in_progress":
        return status
    turns = url_path("/v1/agents/sessions/{}/turns", session["id"])
    latest = get(f"{turns}?limit=1&order=desc")["data"]
    if not latest or latest[0]["status"] in ENDED:
        return status
    return HELD.get(str((latest[0].get("x_corebox") or {}).get("phase")), status)


def headline(item: dict[str, Any]) -> str:
    """A session's name from its first item: the first line of a user message that is not
    a directive (else its first line), at most `LONGEST_NAME` characters; "" otherwise."""
    if item.get("type") != "message" or item.get("role") != "user":
        return ""
    text = "".join(str(part.get("text") or "") for part in item.get("content") or [])
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    first = next((line for line in lines if not line.startswith("/")), lines[0] if lines else "")
    return first if len(first) <= LONGEST_NAME else f"{first[:LONGEST_NAME]}…"
