"""`corebox overlays ...`: safety overlays, owner operations with the Core key against a
running Core (like `corebox projects`).

    corebox overlays show [--all]
    corebox overlays set KIND VALUE --project PROJECT_ID --reason TEXT [--agent AGENT_ID]
    corebox overlays clear OVERLAY_ID [--resume]

KIND is `kill_switch` (VALUE `pause` or `cancel`), `tool_disabled` (VALUE a tool name or
an MCP server_label) or `egress` (VALUE `loopback_only`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from allinone.admin import client_for, reporting, server_options, url_path


def add_commands(commands: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    server_options(common)
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    overlays = commands.add_parser(
        "overlays", help="kill switch, tool disable, egress (needs a running server)"
    )
    overlays.set_defaults(group_main=reporting(run))
    actions = overlays.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", parents=[common], help="list the active overlays")
    show.add_argument("--all", action="store_true", help="also the cleared ones")
    put = actions.add_parser("set", parents=[common], help="set an overlay")
    put.add_argument("kind", choices=["kill_switch", "tool_disabled", "egress"])
    put.add_argument("value")
    put.add_argument("--project", required=True, help="the project it applies to")
    put.add_argument("--agent", help="only this agent's sessions")
    put.add_argument("--reason", required=True, help="why (kept in the audit trail)")
    clear = actions.add_parser("clear", parents=[common], help="clear an overlay")
    clear.add_argument("overlay_id")
    clear.add_argument(
        "--resume",
        action="store_true",
        help="a pause kill switch: also resume the turns it paused",
    )


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run one `overlays` command; raise AdminError on failure."""
    client = client_for(args)
    result: Any
    if args.action == "show":
        result = client.call("GET", "/overlays" + ("?all=true" if args.all else ""))["data"]
    elif args.action == "set":
        body = {
            "kind": args.kind,
            "value": args.value,
            "project_id": args.project,
            "agent_id": args.agent,
            "reason": args.reason,
        }
        result = client.call("POST", "/overlays", body)
    else:
        resume = "?resume=true" if args.resume else ""
        result = client.call("DELETE", url_path("/overlays/{}", args.overlay_id) + resume)
    if args.json:
        print(json.dumps(result, indent=2), file=out)
        return
    for item in result if isinstance(result, list) else [result]:
        state = "cleared" if item["cleared_at"] else "active"
        scope = item["agent_id"] or item["project_id"]
        print(
            f"{item['id']}\tv{item['version']}\t{state}\t{item['kind']}={item['value']}"
            f"\t{scope}\t{item['reason']}",
            file=out,
        )
        for command in item.get("resumed", []):  # a rejected one says why (`terminal`)
            why = f" ({command['reason']})" if command["status"] == "rejected" else ""
            print(
                f"  resume {command['id']}\t{command['status']}{why}"
                f"\tturn {command['turn_id']}\tsession {command['session_id']}",
                file=out,
            )
