"""`corebox cluster`: the Core processes sharing a running server's database, read from
its `/core/v1/cluster` API with the Core key from `<data-dir>/secrets/core.key`.

    corebox cluster                          # the server the configuration names
    corebox cluster --url http://127.0.0.1:8801 --json

One line per process, newest start first: its id, whether it is live, stopped or
lapsed (found gone by a peer, which recovered its turns), its host and pid, its last
heartbeat and the Runtimes connected to it. Exit code 0, or 2 when the server cannot be
reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from allinone import admin

COMMAND = "cluster"


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="the Core processes sharing the database (needs a running server)",
        description="The Core processes sharing a running server's database, and the "
        "Runtimes connected to each.",
        epilog="examples:\n  corebox cluster\n  corebox cluster --url http://127.0.0.1:8801 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(group_main=lambda args: run_command(args, sys.stdout))
    admin.server_options(parser)
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        body = admin.client_for(args).call("GET", "/cluster")
    except admin.AdminError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(body, indent=2), file=out)
    else:
        print("\n".join(render(body, int(time.time()))), file=out)
    return 0


def render(body: dict[str, Any], now: int) -> list[str]:
    """The table `corebox cluster` prints."""
    mode = "shared database" if body["shared"] else "one process (embedded database)"
    lines = [
        f"{mode}; answered by {body['process_id']}",
        "process\tstate\thost\tpid\tbeat\tdevices",
    ]
    for row in body["processes"]:
        state = "live" if row["live"] else (row["stop_reason"] or "silent")
        beat = f"{max(0, now - int(row['heartbeat_at']))}s ago"
        devices = ",".join(row["devices"]) or "-"
        lines.append(f"{row['id']}\t{state}\t{row['host']}\t{row['pid']}\t{beat}\t{devices}")
    return lines
