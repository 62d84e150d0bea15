"""`corebox environments ...`: a managed environment's set-up, against a running Core,
with a project key (`--api-key`, else as `run_control.project_key` finds it).

    corebox environments show ENV_ID
    corebox environments wait ENV_ID [--timeout SECONDS]

`wait` follows the set-up until the environment is ready (exit 0) or failed (exit 1,
naming the step and the reason); on a terminal it draws a progress bar (package n of N,
then setup command n of M) on standard error, and through a pipe it prints only the
outcome. Exit 2 when the server cannot be reached or the time runs out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from allinone import run_control
from allinone.admin import AdminError, request_json, server_options, url_path
from allinone.progress import Bar

# The public routes under /v1/agents ask for the Agents API's beta header.
POLL_SECONDS = 0.5
DEFAULT_TIMEOUT_SECONDS = 1800.0


def add_commands(commands: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    server_options(common)
    common.add_argument("--api-key", dest="api_key", help="a project API key")
    common.add_argument(
        "--api-key-file", dest="api_key_file", help="file holding a project API key"
    )
    group = commands.add_parser(
        "environments", help="a managed environment's set-up (needs a running server)"
    )
    group.set_defaults(group_main=main)
    actions = group.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", parents=[common], help="an environment's status and set-up")
    show.add_argument("environment_id")
    show.add_argument("--json", action="store_true", help="print the API's JSON")
    wait = actions.add_parser(
        "wait",
        parents=[common],
        help="follow an environment's set-up until it ends",
        description="Follow an environment's set-up until it ends. Exit status: 0 ready,"
        " 1 failed, 2 when the timeout passes or the server cannot be asked.",
    )
    wait.add_argument("environment_id")
    wait.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="give up after this many seconds, with exit status 2 (default 1800)",
    )


def _seconds(raw: str) -> float:
    """`--timeout`: a number of seconds more than 0."""
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds more than 0, not {raw!r}")
    return seconds


def main(args: argparse.Namespace) -> int:
    try:
        client = run_control.client_for(args, os.environ)
        url = client.base_url + url_path("/v1/agents/environments/{}", args.environment_id)

        def fetch() -> dict[str, Any]:
            environment: dict[str, Any] = request_json(
                url, client.api_key, "GET", None, run_control.BETA
            )
            return environment

        if args.action == "show":
            environment = fetch()
            text = json.dumps(environment, indent=2) if args.json else outcome(environment)
            print(text, file=sys.stdout)
            return 0
        return wait(fetch, sys.stdout, sys.stderr, args.timeout)
    except AdminError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2


def wait(
    fetch: Callable[[], dict[str, Any]],
    out: TextIO,
    err: TextIO,
    timeout: float,
    poll: float = POLL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Follow the set-up through `fetch` (the environment's retrieve) until it ends."""
    deadline = clock() + timeout
    with Bar("set-up", err, unit="") as bar:
        while True:
            environment = fetch()
            if environment["status"] != "pending":
                break
            setup = (environment.get("x_corebox") or {}).get("setup")
            bar.relabel(f"set-up: {step(setup)}")
            bar(setup["done"] if setup else 0, setup["total"] if setup else 0)
            if clock() >= deadline:
                raise AdminError(f"set-up did not end within {timeout:.0f} s")
            time.sleep(poll)
    print(outcome(environment), file=out)
    return 0 if environment["status"] == "ready" else 1


def step(setup: dict[str, Any] | None) -> str:
    """The step set-up is at, in a few words."""
    if not setup:
        return "waiting to start"
    phase = setup["phase"]
    if phase == "installing":
        return f"installing {setup['package']}"
    if phase == "running_setup":
        return "running setup commands"
    if phase == "creating":
        return "creating the workspace"
    return str(phase)


def outcome(environment: dict[str, Any]) -> str:
    """`env_... ready`, `env_... pending (installing x, 1 of 3)` or `env_... failed at
    x: reason`."""
    setup = (environment.get("x_corebox") or {}).get("setup")
    head = f"{environment['id']} {environment['status']}"
    if environment["status"] == "failed":
        failure = (setup or {}).get("failure") or (environment.get("x_corebox") or {}).get(
            "failure"
        )
        place = f" at {setup['package']}" if setup and setup.get("package") else ""
        return f"{head}{place}: {failure or 'unknown reason'}"
    if environment["status"] == "pending" and setup and setup["total"]:
        return f"{head} ({step(setup)}, {setup['done']} of {setup['total']} done)"
    if environment["status"] == "pending":
        return f"{head} ({step(setup)})"
    return head
