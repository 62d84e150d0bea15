"""`corebox agents ...`: an agent's versions and deployment pointers, against a running
Core, with a project key (`--api-key`, else `COREBOX_API_KEY`, else the default
project's key file in the data directory).

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
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from allinone.admin import AdminError, client_for
from allinone.config import ConfigError, load
from allinone.credentials import KEY_FILE

TIMEOUT_SECONDS = 30.0


def add_commands(commands: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", dest="data_dir", help="the server's data directory")
    common.add_argument("--config", help="a corebox.toml file")
    common.add_argument("--url", help="the server's base URL (default: from the configuration)")
    common.add_argument("--api-key", dest="api_key", help="a project API key")
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    agents = commands.add_parser(
        "agents", help="agent versions and deployments (needs a running server)"
    )
    agents.set_defaults(group_main=main)
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


def main(args: argparse.Namespace) -> int:
    try:
        run(args, sys.stdout)
    except AdminError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run one `agents` command; raise AdminError on failure."""
    base_url = client_for(args).base_url
    key = _project_key(args)
    agent = f"/x/v1/agents/{args.agent_id}"
    result: Any
    if args.action == "versions":
        result = _call(base_url, key, "GET", f"{agent}/versions?order=asc&limit=100")["data"]
    elif args.action == "deployments":
        result = _call(base_url, key, "GET", f"{agent}/deployments")["data"]
    else:
        body = {"version": args.version, "expected_pointer_version": args.expected}
        path = f"{agent}/deployments/{args.deployment}/{args.action}"
        result = _call(base_url, key, "POST", path, body)
    if args.json:
        print(json.dumps(result, indent=2), file=out)
        return
    for item in result if isinstance(result, list) else [result]:
        if "config_digest" in item:
            print(f"{item['version']}\t{item['config_digest']}\t{item['created_at']}", file=out)
        else:
            print(f"{item['name']}\t{item['version']}\tpointer {item['pointer_version']}", file=out)


def _project_key(args: argparse.Namespace) -> str:
    if args.api_key:
        return str(args.api_key)
    if os.environ.get("COREBOX_API_KEY"):
        return os.environ["COREBOX_API_KEY"]
    try:
        config = load({"data_dir": args.data_dir, "config": args.config}, os.environ, Path.cwd())
        return (config.data_dir / KEY_FILE).read_text(encoding="utf-8").strip()
    except (ConfigError, OSError) as exc:
        raise AdminError("no project key: pass --api-key or set COREBOX_API_KEY") from exc


def _call(base_url: str, key: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = exc.reason
        raise AdminError(f"the server refused: {message} (HTTP {exc.code})") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise AdminError(f"cannot reach corebox at {base_url}: {exc}") from exc
