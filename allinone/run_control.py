"""`corebox sessions ...`: run control from the command line, against a running server
with a project API key (seed 003 commands, see `allinone.core.control.commands`).

    corebox sessions pause SESSION_ID [--turn TURN_ID] [--expected-version N] [--reason R]
    corebox sessions resume SESSION_ID [...same options]
    corebox sessions cancel SESSION_ID [...same options]
    corebox sessions commands SESSION_ID

Every command that acts with a project key finds it by `project_key`'s rule; the key is
never printed. Each command sends a fresh Idempotency-Key unless `--idempotency-key` is
given, and prints the command's id, action, status and reason (or the API's JSON with
`--json`); it exits with status 1 when the server rejected the command at once.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from allinone.admin import AdminError, request_json, server_options, url_path
from allinone.config import ConfigError, load, server_url
from allinone.credentials import KEY_FILE

ACTIONS = ("pause", "resume", "cancel")
# The header every `/v1/agents` request carries.
BETA = {"OpenAI-Beta": "agents=v1"}


def add_commands(commands: Any) -> Any:
    """Add the `sessions` group to the CLI's subparsers; return the group's own
    subparsers, for the other session commands (fork, rewind)."""
    common = project_options()
    common.add_argument("session_id")
    group = commands.add_parser(
        "sessions",
        help="list sessions; pause, resume, cancel, fork or rewind one (needs a running server)",
    )
    actions = group.add_subparsers(dest="action", required=True)
    for action in ACTIONS:
        parser = actions.add_parser(action, parents=[common], help=f"{action} the active turn")
        parser.add_argument("--turn", dest="turn_id", help="the turn (default: the active one)")
        parser.add_argument(
            "--expected-version",
            dest="expected_state_version",
            type=int,
            help="apply only while the turn is at this state_version",
        )
        parser.add_argument("--reason", help="why (kept on the command)")
        parser.add_argument("--idempotency-key", dest="idempotency_key")
    actions.add_parser("commands", parents=[common], help="list the session's commands")
    return actions


def project_options() -> argparse.ArgumentParser:
    """The options of a command that acts for a project (a parent parser): the server's
    (`admin.server_options`), `--api-key-file` (the key as `project_key` finds it) and
    `--json`."""
    common = argparse.ArgumentParser(add_help=False)
    server_options(common)
    common.add_argument(
        "--api-key-file", dest="api_key_file", help="file holding a project API key"
    )
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    return common


@dataclass(frozen=True)
class ProjectClient:
    base_url: str
    api_key: str

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, key: str = ""
    ) -> Any:
        headers = {"Idempotency-Key": key} if key else None
        return request_json(f"{self.base_url}{path}", self.api_key, method, body, headers)


def client_for(args: argparse.Namespace, environ: Mapping[str, str]) -> ProjectClient:
    flags = {"data_dir": args.data_dir, "config": args.config}
    try:
        config = load(flags, environ, Path.cwd())
        url = server_url(args.url, environ, config)
    except ConfigError as exc:
        raise AdminError(str(exc)) from exc
    given = getattr(args, "api_key", None)  # `--api-key`, where a command has it, comes first
    key = given.strip() if given else project_key(args.api_key_file, environ, url, config.data_dir)
    return ProjectClient(url, key)


def project_key(
    key_file: str | None, environ: Mapping[str, str], base_url: str, data_dir: Path
) -> str:
    """The project key a command uses against the server at `base_url` (after its
    `--api-key`, see `client_for`), the first of: the file `--api-key-file` names;
    COREBOX_API_KEY; OPENAI_API_KEY when OPENAI_BASE_URL is this server's API (the
    banner's `export` line sets both); the default project's key file in `data_dir`,
    which the first start wrote."""
    if key_file:
        return _read_key(Path(key_file), f"cannot read the API key file {key_file}")
    key = environ.get("COREBOX_API_KEY", "").strip()
    if key:
        return key
    key = environ.get("OPENAI_API_KEY", "").strip()
    if key and _names(environ, base_url):
        return key
    saved = data_dir / KEY_FILE
    how = "use --api-key-file or set COREBOX_API_KEY"
    if not saved.exists():
        raise AdminError(f"no project API key: {how} (there is no {saved})")
    return _read_key(saved, f"no project API key: {how}")


def _names(environ: Mapping[str, str], base_url: str) -> bool:
    """Whether OPENAI_BASE_URL is the API of the server at `base_url`."""
    return environ.get("OPENAI_BASE_URL", "").strip().rstrip("/") == f"{base_url}/v1"


def _read_key(path: Path, failure: str) -> str:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AdminError(f"{failure}: {exc.strerror}") from exc
    if not key:
        raise AdminError(f"{failure}: {path} is empty")
    return key


def run(args: argparse.Namespace, out: TextIO, environ: dict[str, str] | None = None) -> int:
    """Run one `sessions pause|resume|cancel|commands`; its exit status (1 when the server
    rejected the command). Raises AdminError when the server cannot be asked or refused
    the request itself."""
    client = client_for(args, dict(os.environ if environ is None else environ))
    base = url_path("/x/v1/sessions/{}/commands", args.session_id)
    if args.action == "commands":
        rows = client.call("GET", f"{base}?limit=100")["data"]
        if args.json:
            out.write(json.dumps(rows, indent=2) + "\n")
            return 0
        for row in rows:
            _line(row, out)
        return 0
    body = {
        "action": args.action,
        "turn_id": args.turn_id,
        "expected_state_version": args.expected_state_version,
        "reason": args.reason,
    }
    key = args.idempotency_key or f"cli-{secrets.token_hex(12)}"
    row = client.call("POST", base, body, key)
    if args.json:
        out.write(json.dumps(row, indent=2) + "\n")
    else:
        _line(row, out)
    return 1 if row["status"] == "rejected" else 0


def _line(row: dict[str, Any], out: TextIO) -> None:
    reason = row.get("reason") or "-"
    out.write(f"{row['id']}\t{row['action']}\t{row['status']}\t{row['turn_id'] or '-'}\t{reason}\n")
