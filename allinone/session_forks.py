"""`corebox sessions fork|rewind`: fork a session at a turn (or item), or hide its last
turns from the model, against a running server with a project key.

    corebox sessions fork SESSION_ID [--turn-id TURN] [--item-id ITEM]
    corebox sessions rewind SESSION_ID [--turns N]

The key is `--api-key-file`, else `COREBOX_API_KEY`, else the default project's key file
in the data directory (`default-project.key`, written at first start). Each command
prints one line (the new session's id and its parent, or the hidden turns), or the API's
JSON with `--json`.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

from allinone import run_control
from allinone.admin import url_path

ACTIONS = ("fork", "rewind")


def add_commands(actions: Any) -> None:
    """Add `fork` and `rewind` to the `sessions` group's subparsers."""
    common = run_control.project_options()
    fork = actions.add_parser(
        "fork",
        parents=[common],
        help="copy a session up to a turn (default: its last finished turn) into a new one",
    )
    fork.add_argument("session_id")
    fork.add_argument("--turn-id", dest="turn_id", help="fork at the end of this turn")
    fork.add_argument("--item-id", dest="item_id", help="fork just after this item")
    rewind = actions.add_parser(
        "rewind", parents=[common], help="hide the last turns from the model (history stays)"
    )
    rewind.add_argument("session_id")
    rewind.add_argument("--turns", type=int, default=1, help="how many turns (default 1)")


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run `sessions fork` or `sessions rewind`; raise AdminError on failure (the client is
    `sessions pause|resume|cancel`'s: the same key and address rules)."""
    client = run_control.client_for(args, dict(os.environ))
    path = url_path("/x/v1/sessions/{}/{}", args.session_id, args.action)
    if args.action == "fork":
        body: dict[str, Any] = {"turn_id": args.turn_id, "item_id": args.item_id}
    else:
        body = {"turns": args.turns}
    result = client.call("POST", path, body)
    if args.json:
        print(json.dumps(result, indent=2), file=out)
    elif args.action == "fork":
        parent = result["x_corebox"]["forked_from"]
        print(
            f"{result['id']}\tforked from {parent['session_id']} at {parent['turn_id']}", file=out
        )
    else:
        hidden = ", ".join(result["hidden_turn_ids"])
        print(f"{result['id']}\thid {result['turns']} turn(s): {hidden}", file=out)
