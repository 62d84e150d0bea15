"""`corebox comms ...`: the project owner's commands for roles, instances and
conversations, calling a running server's `/core/v1/comms` routes with a project API key.

`open` and `close` act as one of the project's instances (`--from-instance`); `open`
sends a new random Idempotency-Key unless `--idempotency-key` names one to retry with.
`contacts` lists the project's contacts; `show` prints one conversation with each
message's status (`sent`, or `received` once the peer's receiver saved it) and the
project's claims on it.

The server is the one every command that talks to a running server finds (`--url`, else
COREBOX_URL, else the configured host and port; `--config` names a corebox.toml): the
CLI resolves it and passes it to `run`. `--url`, `--config` and `--api-key-file` may be
given after `comms` or after the subcommand. The key comes from `--api-key-file` or the
COREBOX_API_KEY environment variable, never from a command-line value. A new instance's
runtime token is written once to a new private file (`--token-file`, mode 0600, never
overwritten) and never printed.
"""

from __future__ import annotations

import argparse
import os
import secrets
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from allinone.receiver.client import Http, check_origin
from allinone.receiver.errors import ConfigError

PREFIX = "/core/v1/comms/roles"
CONTACTS = "/core/v1/comms/contacts"
INSTANCES = "/core/v1/comms/instances"


def _options(parser: argparse.ArgumentParser, default: Any = None) -> None:
    """`--url`, `--config` and `--api-key-file`."""
    parser.add_argument(
        "--url",
        default=default,
        help="the server's base URL (default: $COREBOX_URL, else from the configuration)",
    )
    parser.add_argument("--config", default=default, help="a corebox.toml file")
    parser.add_argument(
        "--api-key-file",
        default=default,
        help="file holding a project API key (default: $COREBOX_API_KEY)",
    )


def add_parser(commands: Any) -> None:
    comms = commands.add_parser("comms", help="communication roles, instances and conversations")
    _options(comms)
    # The same options after the subcommand; suppressed defaults leave what was given
    # after `comms` in place.
    common = argparse.ArgumentParser(add_help=False)
    _options(common, argparse.SUPPRESS)
    what = comms.add_subparsers(dest="comms_command", required=True)
    _add_identities(what, common)
    _add_conversations(what, common)


def _add_identities(what: Any, common: argparse.ArgumentParser) -> None:
    """`roles`, `instances`, `primary` and `stream`."""
    roles = what.add_parser("roles", help="communication roles").add_subparsers(
        dest="action", required=True
    )
    create = roles.add_parser("create", parents=[common], help="create a role")
    create.add_argument("--name", required=True)
    create.add_argument("--agent-id", help="a saved Agent that owns the role")
    roles.add_parser("list", parents=[common], help="list the project's roles")
    show = roles.add_parser("show", parents=[common], help="show one role")
    show.add_argument("--role", required=True)

    instances = what.add_parser("instances", help="instances of a role").add_subparsers(
        dest="action", required=True
    )
    register = instances.add_parser(
        "create", parents=[common], help="register an instance; writes its token"
    )
    register.add_argument("--role", required=True)
    register.add_argument("--name", required=True)
    register.add_argument(
        "--token-file", required=True, help="new file to receive the runtime token (mode 0600)"
    )
    listing = instances.add_parser("list", parents=[common], help="list a role's instances")
    listing.add_argument("--role", required=True)

    primary = what.add_parser("primary", help="the role's primary instance").add_subparsers(
        dest="action", required=True
    )
    switch = primary.add_parser(
        "set", parents=[common], help="make another instance primary (epoch + 1)"
    )
    switch.add_argument("--role", required=True)
    switch.add_argument("--instance", required=True)
    switch.add_argument("--expected-epoch", type=int, required=True)

    stream = what.add_parser("stream", help="the role's event stream").add_subparsers(
        dest="action", required=True
    )
    rotate = stream.add_parser(
        "rotate", parents=[common], help="start a new stream id after a restore"
    )
    rotate.add_argument("--role", required=True)
    rotate.add_argument("--expected-stream-id", required=True)


def _add_conversations(what: Any, common: argparse.ArgumentParser) -> None:
    """`open`, `contacts`, `show` and `close`."""
    opening = what.add_parser(
        "open", parents=[common], help="open a contact from one of your instances"
    )
    opening.add_argument("--from-instance", required=True, help="the sending instance's id")
    opening.add_argument("--to-role", required=True, help="the recipient role's id")
    opening.add_argument("--idempotency-key", help="retry an earlier open with its key")
    opening.add_argument("text", help="the opening message")
    what.add_parser("contacts", parents=[common], help="list the project's contacts")
    shown = what.add_parser(
        "show", parents=[common], help="one conversation, with message statuses"
    )
    shown.add_argument("contact", help="the contact's id")
    closing = what.add_parser(
        "close", parents=[common], help="close a contact from one of your instances"
    )
    closing.add_argument("--from-instance", required=True, help="the closing instance's id")
    closing.add_argument("contact", help="the contact's id")


def _key(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    if args.api_key_file:
        key = Path(args.api_key_file).read_text(encoding="utf-8").strip()
    else:
        key = environ.get("COREBOX_API_KEY", "").strip()
    if not key:
        raise ConfigError("no project API key: use --api-key-file or set COREBOX_API_KEY")
    return key


def _register(http: Http, args: argparse.Namespace) -> dict[str, Any]:
    """Register an instance and write its token to a new private file. The file's place
    is checked first, so that a token that could not be saved is not issued."""
    target = Path(args.token_file)
    if target.exists():
        raise ConfigError(f"{target} already exists; choose a new token file")
    if not target.parent.is_dir():
        missing = "is not a directory" if target.parent.exists() else "does not exist"
        raise ConfigError(f"cannot write {target}: {target.parent} {missing}")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write {target}: {target.parent} is not a writable directory")
    found = http.call("POST", _role(args.role) + "/instances", body={"name": args.name})[0]
    token = found.pop("token")
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
    except OSError as exc:
        raise ConfigError(
            f"cannot write {target} ({exc.strerror}); instance {found['id']} was registered"
            " but its token is lost: register another"
        ) from exc
    return {**found, "token_file": str(target.absolute())}


def _role(role_id: str) -> str:
    return f"{PREFIX}/{urllib.parse.quote(role_id, safe='')}"


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _conversations(http: Http, args: argparse.Namespace) -> dict[str, Any]:
    command = args.comms_command
    if command == "contacts":
        return http.call("GET", CONTACTS)[0]
    if command == "show":
        return http.call("GET", f"{CONTACTS}/{_segment(args.contact)}")[0]
    instance = f"{INSTANCES}/{_segment(args.from_instance)}/contacts"
    if command == "close":
        return http.call("POST", f"{instance}/{_segment(args.contact)}/close", body={})[0]
    key = args.idempotency_key or "cli-" + secrets.token_hex(16)
    body = {"to_role_id": args.to_role, "message": args.text}
    found = http.call("POST", instance, body=body, headers={"Idempotency-Key": key})[0]
    return {**found, "idempotency_key": key}


def run(args: argparse.Namespace, environ: Mapping[str, str], server: str) -> dict[str, Any]:
    """Run one `comms` command against the server at `server` (as `config.server_url`
    finds it); its JSON answer."""
    try:
        origin = check_origin(server)
    except ValueError as exc:
        raise ConfigError(f"the server's address {server}: {exc}") from exc
    http = Http(origin, _key(args, environ))
    command = args.comms_command
    if command in ("open", "contacts", "show", "close"):
        return _conversations(http, args)
    action = args.action
    if command == "roles" and action == "create":
        body: dict[str, Any] = {"name": args.name}
        if args.agent_id:
            body["agent_id"] = args.agent_id
        return http.call("POST", PREFIX, body=body)[0]
    if command == "roles" and action == "list":
        return http.call("GET", PREFIX)[0]
    if command == "roles" and action == "show":
        return http.call("GET", _role(args.role))[0]
    if command == "instances" and action == "create":
        return _register(http, args)
    if command == "instances" and action == "list":
        return http.call("GET", _role(args.role) + "/instances")[0]
    if command == "primary":
        body = {"instance_id": args.instance, "expected_epoch": args.expected_epoch}
        return http.call("POST", _role(args.role) + "/primary", body=body)[0]
    body = {"expected_stream_id": args.expected_stream_id}
    return http.call("POST", _role(args.role) + "/rotate-stream", body=body)[0]
