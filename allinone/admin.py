"""`corebox projects ...` and `corebox keys ...`: operator commands that call the `/core/v1`
API of a running server with the Core key read from `<data-dir>/secrets/core.key`.

    corebox projects create NAME          corebox keys create PROJECT_ID [--name NAME]
    corebox projects list                 corebox keys list PROJECT_ID
    corebox projects archive PROJECT_ID   corebox keys revoke PROJECT_ID KEY_ID
    corebox projects grant-root PROJECT_ID PATH     corebox projects grants PROJECT_ID
    corebox projects revoke-root PROJECT_ID PATH    corebox projects trust PROJECT_ID [--no]

Every command takes `--data-dir` and `--config` (resolved like `corebox serve`, which
also gives the server's address) and `--url` (or `COREBOX_URL`) to name the server;
`--json` prints the API's JSON instead of text. A new key is printed once and never again; no
key is written anywhere else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from allinone.config import ConfigError, load, server_url
from allinone.credentials import core_key_path, read_core_key
from allinone.doctor import failure

TIMEOUT_SECONDS = 30


class AdminError(Exception):
    """The command cannot complete; the message is the one line the user sees."""


def add_commands(commands: Any) -> None:
    """Add the `projects` and `keys` command groups to the CLI's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    server_options(common)
    common.add_argument("--json", action="store_true", help="print the API's JSON")

    projects = commands.add_parser("projects", help="manage projects (needs a running server)")
    actions = projects.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="create a project")
    create.add_argument("name")
    actions.add_parser("list", parents=[common], help="list projects")
    archive = actions.add_parser(
        "archive", parents=[common], help="archive a project and revoke its keys"
    )
    archive.add_argument("project_id")
    for action, text in (
        ("grant-root", "let the project bind self_hosted workspaces under PATH"),
        ("revoke-root", "withdraw a granted workspace root"),
    ):
        change = actions.add_parser(action, parents=[common], help=text)
        change.add_argument("project_id")
        change.add_argument("path")
    grants = actions.add_parser(
        "grants", parents=[common], help="show what the project may touch on the host"
    )
    grants.add_argument("project_id")
    trust = actions.add_parser(
        "trust",
        parents=[common],
        help="let the project run commands where they cannot be confined (--no: stop)",
    )
    trust.add_argument("project_id")
    trust.add_argument("--no", dest="untrust", action="store_true", help="stop trusting it")

    keys = commands.add_parser("keys", help="manage project API keys (needs a running server)")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="issue a key (shown once)")
    create.add_argument("project_id")
    create.add_argument("--name", help="a label for the key")
    listing = actions.add_parser("list", parents=[common], help="list a project's keys")
    listing.add_argument("project_id")
    revoke = actions.add_parser("revoke", parents=[common], help="revoke one key")
    revoke.add_argument("project_id")
    revoke.add_argument("key_id")


def server_options(parser: argparse.ArgumentParser) -> None:
    """`--data-dir`, `--config` and `--url`: where a command that talks to a running server
    finds the configuration, the keys and the server (`config.server_url`)."""
    parser.add_argument("--data-dir", dest="data_dir", help="the server's data directory")
    parser.add_argument("--config", help="a corebox.toml file")
    parser.add_argument(
        "--url", help="the server's base URL (default: $COREBOX_URL, else from the configuration)"
    )


def reporting(run: Callable[[argparse.Namespace, TextIO], None]) -> Callable[..., int]:
    """A command group's `group_main`: `run` on standard output, with an AdminError said
    on standard error in one line and exit status 1."""

    def main(args: argparse.Namespace) -> int:
        try:
            run(args, sys.stdout)
        except AdminError as exc:
            print(f"corebox: error: {exc}", file=sys.stderr)
            return 1
        return 0

    return main


def url_path(template: str, *ids: str) -> str:
    """`template` with each `{}` replaced by the next of `ids`, percent-encoded as one
    path segment, so that an id the user typed is never read as `/`, a query or a control
    character: the server answers a bad id with its own 404 or 400. Every CLI command puts
    an id into a URL path through here. Raises AdminError for an id that cannot be a
    segment at all (empty, `.` or `..`)."""
    for value in ids:
        if value in ("", ".", ".."):
            raise AdminError(f"{value!r} is not an id")
    return template.format(*(urllib.parse.quote(value, safe="") for value in ids))


def request_json(
    url: str,
    key: str,
    method: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """One JSON request to a running server with `key`; its decoded answer. Raises
    AdminError naming the server's own message, or why the server could not be reached
    (or `url` could not be sent at all; ids go into it through `url_path`). (Every CLI
    command that talks to a running server goes through here.)"""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
            answer = reply.read()
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                error = json.loads(exc.read())["error"]
            except (ValueError, KeyError, TypeError):
                error = None
        raise AdminError(refusal(exc.code, error, str(exc.reason))) from exc
    except (urllib.error.URLError, OSError) as exc:
        base = url.split("/", 3)[:3]
        raise AdminError(unreachable("/".join(base), exc)) from exc
    except ValueError as exc:  # http.client.InvalidURL: an address no request can carry
        raise AdminError(f"no request can go to {url!r}: {exc}") from exc
    return json.loads(answer)


def refusal(status: int, error: Any, fallback: str) -> str:
    """What a command says when the server refused a request: the API error's own
    message (`fallback` when the answer held none), the field it names when the message
    does not, and the HTTP status."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        return f"the server refused: {fallback} (HTTP {status})"
    param = error.get("param")
    if isinstance(param, str) and param and param not in message:
        message = f"{message} Field: {param}."  # as the console shows it
    return f"the server refused: {message} (HTTP {status})"


def unreachable(base_url: str, exc: OSError) -> str:
    """Why a server could not be reached, in words, with what to try (never urllib's
    `<urlopen error ...>` wrapping)."""
    return (
        f"cannot reach corebox at {base_url} ({failure(exc)}); is `corebox serve` running"
        " there? Give another address with --url (or COREBOX_URL)"
    )


@dataclass(frozen=True)
class CoreClient:
    base_url: str
    core_key: str

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return request_json(f"{self.base_url}/core/v1{path}", self.core_key, method, body)

    def all_pages(self, path: str) -> list[dict[str, Any]]:
        return all_pages(self.call, path)


def all_pages(
    call: Callable[[str, str], Any], path: str, cursor: str = "id"
) -> list[dict[str, Any]]:
    """Every item of the list route `path`, oldest first, page after page; `cursor` is
    the field of an item that the route's `after` takes."""
    items: list[dict[str, Any]] = []
    after = ""
    while True:
        page = call("GET", f"{path}?order=asc&limit=100{after}")
        items.extend(page["data"])
        if not page["has_more"] or not page["data"]:
            return items
        after = "&" + urllib.parse.urlencode({"after": page["data"][-1][cursor]})


def client_for(args: argparse.Namespace) -> CoreClient:
    flags = {"data_dir": args.data_dir, "config": args.config}
    try:
        config = load(flags, os.environ, Path.cwd())
        url = server_url(args.url, os.environ, config)
    except ConfigError as exc:
        raise AdminError(str(exc)) from exc
    try:
        key = read_core_key(config.data_dir)
    except OSError as exc:
        raise AdminError(
            f"no Core key at {core_key_path(config.data_dir)}; start `corebox serve` with this"
            " data directory first"
        ) from exc
    return CoreClient(url, key)


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run one `projects` or `keys` command; raise AdminError on failure."""
    client = client_for(args)
    result: Any
    if args.command == "projects":
        result = _projects(client, args)
    else:
        base = url_path("/projects/{}/api_keys", args.project_id)
        if args.action == "create":
            body = {} if args.name is None else {"name": args.name}
            result = client.call("POST", base, body)
        elif args.action == "list":
            result = client.all_pages(base)
        else:
            result = client.call("POST", base + url_path("/{}/revoke", args.key_id))
    if args.json:
        print(json.dumps(result, indent=2), file=out)
        return
    for item in result if isinstance(result, list) else [result]:
        print(_line(item), file=out)
    if args.command == "keys" and args.action == "create":
        print(f"key: {result['key']}", file=out)
        print("This key is shown once; store it now.", file=out)


def _projects(client: CoreClient, args: argparse.Namespace) -> Any:
    if args.action == "create":
        return client.call("POST", "/projects", {"name": args.name})
    if args.action == "list":
        return client.all_pages("/projects")
    if args.action == "archive":
        return client.call("POST", url_path("/projects/{}/archive", args.project_id))
    grants = url_path("/projects/{}/host_grants", args.project_id)
    if args.action == "grants":
        return client.call("GET", grants)
    if args.action == "trust":
        return client.call("POST", f"{grants}/trust", {"trusted": not args.untrust})
    path = os.path.abspath(os.path.expanduser(args.path))
    suffix = "/revoke" if args.action == "revoke-root" else ""
    return client.call("POST", f"{grants}/workspace_roots{suffix}", {"path": path})


def _line(item: dict[str, Any]) -> str:
    if item.get("object") == "project.host_grants":
        roots = ", ".join(item["workspace_roots"]) or "(none)"
        commands = "allowed" if item["commands_allowed"] else "refused"
        return (
            f"{item['project_id']}\troots: {roots}\ttrusted: {item['trusted']}"
            f"\tcommands: {commands} (confinement: {item['confinement']['kind']})"
        )
    if item.get("object") == "project":
        return f"{item['id']}\t{item['status']}\t{item['name']}"
    name = item.get("name") or ""
    return f"{item['id']}\t{item['status']}\t{item['prefix']}...\t{name}"
