"""`corebox sessions fork|rewind`: fork a session at a turn (or item), or hide its last
turns from the model, against a running server with a project key.

    corebox sessions fork SESSION_ID [--turn-id TURN] [--item-id ITEM]
    corebox sessions rewind SESSION_ID [--turns N]

The key is `COREBOX_API_KEY`, else the default project's key file in the data directory
(`default-project.key`, written at first start). Each command prints one line (the new
session's id and its parent, or the hidden turns), or the API's JSON with `--json`.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from allinone.admin import TIMEOUT_SECONDS, AdminError
from allinone.config import ConfigError, load
from allinone.credentials import KEY_FILE

ACTIONS = ("fork", "rewind")


def add_commands(actions: Any) -> None:
    """Add `fork` and `rewind` to the `sessions` group's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", dest="data_dir", help="the server's data directory")
    common.add_argument("--config", help="a corebox.toml file")
    common.add_argument("--url", help="the server's base URL (default: from the configuration)")
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    fork = actions.add_parser(
        "fork",
        parents=[common],
        help="copy a session up to a turn (default: its last finished turn) into a new one",
    )
    fork.add_argument("session_id")
    fork.add_argument("--turn-id", dest="turn_id", help="fork at the end of this turn")
    fork.add_argument("--item-id", dest="item_id", help="fork just after this item")
    rewind = actions.add_parser(
        "rewind", parents=[common], help="hide the last turns from the model (history stays)"
    )
    rewind.add_argument("session_id")
    rewind.add_argument("--turns", type=int, default=1, help="how many turns (default 1)")


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Run `sessions fork` or `sessions rewind`; raise AdminError on failure."""
    base_url, key = _target(args)
    path = f"/x/v1/sessions/{args.session_id}/{args.action}"
    if args.action == "fork":
        body: dict[str, Any] = {"turn_id": args.turn_id, "item_id": args.item_id}
    else:
        body = {"turns": args.turns}
    result = _post(base_url, key, path, body)
    if args.json:
        print(json.dumps(result, indent=2), file=out)
    elif args.action == "fork":
        parent = result["x_corebox"]["forked_from"]
        print(
            f"{result['id']}\tforked from {parent['session_id']} at {parent['turn_id']}", file=out
        )
    else:
        hidden = ", ".join(result["hidden_turn_ids"])
        print(f"{result['id']}\thid {result['turns']} turn(s): {hidden}", file=out)


def _target(args: argparse.Namespace) -> tuple[str, str]:
    flags = {"data_dir": args.data_dir, "config": args.config}
    try:
        config = load(flags, os.environ, Path.cwd())
    except ConfigError as exc:
        raise AdminError(str(exc)) from exc
    key = config.api_key
    if not key:
        try:
            key = (config.data_dir / KEY_FILE).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise AdminError(
                f"no project key: set COREBOX_API_KEY or keep {config.data_dir / KEY_FILE}"
            ) from exc
    url = args.url
    if not url:
        host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
        url = f"http://{f'[{host}]' if ':' in host else host}:{config.port}"
    return url.rstrip("/"), key


def _post(base_url: str, key: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=json.dumps(body).encode(),
        method="POST",
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
