"""`corebox agents ...`: an agent's versions and deployment pointers, against a running
Core, with a project key (`--api-key`, else as `run_control.project_key` finds it).

    corebox agents versions AGENT_ID
    corebox agents deployments AGENT_ID
    corebox agents promote AGENT_ID DEPLOYMENT VERSION [--expected POINTER_VERSION]
    corebox agents rollback AGENT_ID DEPLOYMENT [--version N] [--expected POINTER_VERSION]

A stale `--expected` is refused (HTTP 409) and nothing moves.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, TextIO

from allinone import run_control
from allinone.admin import all_pages, reporting, url_path


def add_commands(commands: Any) -> None:
    common = run_control.project_options()
    common.add_argument("--api-key", dest="api_key", help="a project API key")
    agents = commands.add_parser(
        "agents", help="agent versions and deployments (needs a running server)"
    )
    agents.set_defaults(group_main=reporting(run))
    actions = agents.add_subparsers(dest="action", required=True)
    versions = actions.add_parser("versions", parents=[common], help="list an agent's versions")
    versions.add_argument("agent_id")
    deployments = actions.add_parser(
        "deployments", parents=[common], help="list an agent's deployment pointers"
    )
    deployments.add_argument("agent_id")
    promote = actions.add_parser(
        "promote", parents=[common], help="point a deployment at a version"
    )
    promote.add_argument("agent_id")
    promote.add_argument("deployment")
    promote.add_argument("version", type=int)
    promote.add_argument("--expected", type=int, help="the pointer version you last saw")
    rollback = actions.add_parser(
        "rollback", parents=[common], help="point a deployment back (default: where it was)"
    )
    rollback.add_argument("agent_id")
    rollback.add_argument("deployment")
    rollback.add_argument("--version", type=int, help="the version to go back to")
    rollback.add_argument("--expected", type=int, help="the pointer version you last saw")


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run one `agents` command; raise AdminError on failure."""
    client = run_control.client_for(args, os.environ)
    agent = url_path("/x/v1/agents/{}", args.agent_id)
    result: Any
    if args.action == "versions":
        result = all_pages(client.call, f"{agent}/versions", cursor="version")
    elif args.action == "deployments":
        result = client.call("GET", f"{agent}/deployments")["data"]
    else:
        body = {"version": args.version, "expected_pointer_version": args.expected}
        result = client.call(
            "POST", agent + url_path("/deployments/{}/{}", args.deployment, args.action), body
        )
    if args.json:
        print(json.dumps(result, indent=2), file=out)
        return
    for item in result if isinstance(result, list) else [result]:
        if "config_digest" in item:
            made = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(item["created_at"]))
            print(f"{item['version']}\t{item['config_digest']}\t{made}", file=out)
        else:
            print(f"{item['name']}\t{item['version']}\tpointer {item['pointer_version']}", file=out)
