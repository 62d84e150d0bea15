"""Runtimes elsewhere: `corebox devices ...` (operator commands against a running Core,
with the Core key, like `corebox projects`) and the arguments of `corebox daemon`.

    corebox devices create NAME [--credential-file FILE]
    corebox devices list
    corebox devices revoke DEVICE_ID
    corebox daemon --core URL --credential-file FILE [--device-id ID] [--workspaces DIR]
                   [--allowed-root DIR ...] [--allow-unconfined-commands]

A device credential is shown once (or written once to `--credential-file`, mode 0600,
as JSON holding `device_id`, `credential` and `core_url`); Core keeps only its digest.
`corebox daemon` reads that file, or a file holding only the credential (then
`--device-id` is required). Revoking a device closes its live connection (4001) and its
daemon stops. The daemon binds `self_hosted` workspaces only under its `--allowed-root`
directories (default: the home directory), never in or around its `--workspaces`
directory, and runs commands confined (Landlock, else bubblewrap); where nothing
confines them it refuses commands unless `--allow-unconfined-commands` is given.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from allinone.admin import AdminError, client_for, server_options, url_path
from allinone.credentials import write_secret_file
from allinone.logs import add_format_flag

API_SUFFIX = "/api/v1"


def add_commands(commands: Any) -> None:
    """Add the `devices` group and the `daemon` command to the CLI's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    server_options(common)
    common.add_argument("--json", action="store_true", help="print the API's JSON")

    devices = commands.add_parser(
        "devices", help="manage Runtime devices for `corebox daemon` (needs a running server)"
    )
    actions = devices.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create", parents=[common], help="issue a device and its credential (shown once)"
    )
    create.add_argument("name")
    create.add_argument(
        "--credential-file",
        dest="credential_file",
        help="write the credential to this new file (mode 0600) instead of printing it",
    )
    actions.add_parser("list", parents=[common], help="list devices")
    revoke = actions.add_parser(
        "revoke", parents=[common], help="revoke a device; its Runtime is disconnected"
    )
    revoke.add_argument("device_id")

    daemon = commands.add_parser(
        "daemon", help="run a Runtime connected to a corebox Core elsewhere"
    )
    daemon.add_argument("--core", help="Core's base URL, e.g. http://core-host:8800")
    daemon.add_argument(
        "--credential-file",
        dest="credential_file",
        required=True,
        help="the file `corebox devices create --credential-file` wrote",
    )
    daemon.add_argument("--device-id", dest="device_id", help="the device id, if not in the file")
    daemon.add_argument(
        "--workspaces", help="a directory for the workspaces of hosted Environments"
    )
    daemon.add_argument(
        "--allowed-root",
        dest="allowed_roots",
        action="append",
        help="a directory under which self_hosted workspaces may lie (repeatable;"
        " default: the home directory)",
    )
    daemon.add_argument(
        "--allow-unconfined-commands",
        dest="allow_unconfined",
        action="store_true",
        help="run commands even where neither Landlock nor bubblewrap can confine them",
    )
    daemon.add_argument(
        "--log-level", dest="log_level", default="info", help="critical, error, warning, info"
    )
    add_format_flag(daemon)


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run one `devices` command; raise AdminError on failure."""
    client = client_for(args)
    result: Any
    if args.action == "create":
        if args.credential_file:
            _can_save(Path(args.credential_file))
        result = client.call("POST", "/devices", {"name": args.name})
        if args.credential_file:
            _save(Path(args.credential_file), result, client.base_url)
    elif args.action == "list":
        result = client.all_pages("/devices")
    else:
        result = client.call("DELETE", url_path("/devices/{}", args.device_id))
    if args.json:
        shown = dict(result) if isinstance(result, dict) else result
        if args.action == "create" and args.credential_file:
            shown.pop("credential", None)
        print(json.dumps(shown, indent=2), file=out)
        return
    for item in result if isinstance(result, list) else [result]:
        connected = "connected" if item["connected"] else "-"
        print(f"{item['id']}\t{item['status']}\t{connected}\t{item['name']}", file=out)
    if args.action == "create":
        if args.credential_file:
            print(f"credential written to {args.credential_file} (mode 0600)", file=out)
        else:
            print(f"credential: {result['credential']}", file=out)
            print("This credential is shown once; store it now.", file=out)


def _can_save(path: Path) -> None:
    """Refuse before a device is issued when its credential file could not be written."""
    if path.exists():
        raise AdminError(f"{path} already exists; choose a new credential file")
    if not path.parent.is_dir():
        missing = "is not a directory" if path.parent.exists() else "does not exist"
        raise AdminError(f"cannot write {path}: {path.parent} {missing}")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise AdminError(f"cannot write {path}: {path.parent} is not a writable directory")


def _save(path: Path, device: dict[str, Any], base_url: str) -> None:
    body = {"device_id": device["id"], "credential": device["credential"], "core_url": base_url}
    try:
        write_secret_file(path, json.dumps(body))
    except OSError as exc:
        raise AdminError(
            f"cannot write {path} ({exc.strerror}); device {device['id']} was issued but its"
            f" credential is lost: revoke it with `corebox devices revoke {device['id']}`"
        ) from exc


@dataclass(frozen=True)
class DaemonTarget:
    core_url: str  # ends with /api/v1, as the Runtime's bootstrap expects
    device_id: str
    credential: str


def daemon_target(args: argparse.Namespace) -> DaemonTarget:
    """Resolve `corebox daemon`'s arguments; raise AdminError naming what is missing."""
    path = Path(args.credential_file)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AdminError(f"cannot read {path} ({exc.strerror})") from exc
    stored: dict[str, Any] = {}
    if text.startswith("{"):
        try:
            stored = json.loads(text)
        except ValueError as exc:
            raise AdminError(f"{path} is not a credential file") from exc
    credential = str(stored.get("credential", "")) if stored else text
    device_id = args.device_id or str(stored.get("device_id", ""))
    core = args.core or str(stored.get("core_url", ""))
    if not credential or any(ch.isspace() for ch in credential):
        raise AdminError(f"{path} holds no usable credential")
    if not device_id:
        raise AdminError("the device id is unknown: pass --device-id")
    if not core.startswith(("http://", "https://")):
        raise AdminError("pass --core with Core's http(s) URL")
    core = core.rstrip("/")
    return DaemonTarget(
        core if core.endswith(API_SUFFIX) else core + API_SUFFIX, device_id, credential
    )
