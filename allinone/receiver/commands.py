"""The CLI subcommands of this package: `receiver`, `handler` and `comms`.

`add_commands` adds them to the `corebox` parser; `run_command` runs one and returns the
exit status: 0 success, 1 an error (one line on stderr), 2 `receiver check` found a
probe that failed (its JSON says which), 3 the receiver halted and needs
the owner (`status` shows why under `local.halted`), 4 another receiver process holds
the store's lock. Results are JSON on
stdout. The COREBOX_RECEIVER_FAULT environment variable is a seeded test hook
(`crash_before_receipt`: the receiver kills itself after saving a page of events and
before sending its receipt).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from allinone.receiver import owner
from allinone.receiver.errors import Halted, LockHeld, ReceiverError

COMMANDS = ("receiver", "handler", "comms")


def add_commands(commands: Any) -> None:
    receiver = commands.add_parser("receiver", help="the protocol 1.4 reference receiver")
    actions = receiver.add_subparsers(dest="receiver_command", required=True)
    for name, text in (
        ("once", "run one receive-and-handle cycle (for a host scheduler)"),
        ("status", "show local state and the platform's live view"),
        ("run", "poll every 30 s with backoff until stopped (its own scheduler)"),
        ("resolve", "apply an owner-confirmed resolution.json to a job"),
        ("jobs", "list the jobs that await the owner, with their ids (--all: every job)"),
        ("check", "self-check: the platform, a synthetic message to the handler, a notice"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--config", required=True, help="the private config.json")
        if name == "resolve":
            action.add_argument("--resolution", required=True, help="a private resolution.json")
        if name == "jobs":
            action.add_argument("--all", action="store_true", help="every job, not only open ones")
        action.add_argument(
            "--log-level",
            default="warning",
            choices=("critical", "error", "warning", "info", "debug"),
        )
    handler = commands.add_parser("handler", help="built-in handler adapters for the receiver")
    kinds = handler.add_subparsers(dest="handler_kind", required=True)
    agent = kinds.add_parser("agent", help="answer with one turn of a saved corebox Agent")
    agent.add_argument("--agent-id", required=True)
    agent.add_argument(
        "--base-url",
        default="http://127.0.0.1:8800/v1",
        help="corebox's /v1 API (default http://127.0.0.1:8800/v1)",
    )
    agent.add_argument("--api-key-file", help="file holding a project API key")
    agent.add_argument(
        "--api-key-env",
        default="COREBOX_API_KEY",
        help="environment variable holding the key (default COREBOX_API_KEY)",
    )
    agent.add_argument("--state-dir", help="private directory for the handler's state")
    agent.add_argument(
        "--accept-contacts",
        action="store_true",
        help="accept contacts (raise their reply limit) when replying",
    )
    agent.add_argument(
        "--turn-timeout",
        type=float,
        default=150.0,
        help="seconds to wait for the agent's turn (default 150)",
    )
    owner.add_parser(commands)


def _print(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2) + "\n")
    sys.stdout.flush()


def run_command(
    args: argparse.Namespace, environ: Mapping[str, str], server: str | None = None
) -> int:
    """Run one command; `server` is the address `comms` talks to (the CLI resolves it as
    for every command that talks to a running server; the others do not use it)."""
    level = getattr(args, "log_level", "warning")
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(args, environ, server)
    except Halted as exc:
        print(f"corebox: halted: {exc}", file=sys.stderr)
        return 3
    except LockHeld as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 4
    except (ReceiverError, OSError) as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1


def _dispatch(args: argparse.Namespace, environ: Mapping[str, str], server: str | None) -> int:
    if args.command == "comms":
        if server is None:
            raise ReceiverError("comms needs the server's address")
        _print(owner.run(args, environ, server))
        return 0
    if args.command == "handler":
        # A static import PyInstaller sees; deferred so that only the handler pays for
        # importing the openai package.
        from allinone.receiver import agent_handler

        return agent_handler.main(args, environ)
    # Imported by the receiver's own commands only, not by every `corebox` command.
    from allinone.receiver import runner
    from allinone.receiver.config import load
    from allinone.receiver.resolve import read_resolution, resolve
    from allinone.receiver.store import Store

    loaded = load(Path(args.config))
    fault = environ.get("COREBOX_RECEIVER_FAULT") or None
    command = args.receiver_command
    if command == "once":
        _print(runner.once(loaded, fault).as_dict())
    elif command == "status":
        _print(runner.status(loaded))
    elif command == "jobs":
        _print(runner.jobs(loaded, every=args.all))
    elif command == "check":
        result = runner.check(loaded)
        _print(result)
        return 0 if result["ok"] else 2
    elif command == "run":
        runner.run(loaded, threading.Event(), fault)
    else:
        resolution = read_resolution(Path(args.resolution))
        store = Store.open(loaded.store_path, loaded.lock_path)
        try:
            _print(resolve(store, resolution, int(time.time())))
        finally:
            store.close()
    return 0
