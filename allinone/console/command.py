"""`corebox console`: where the console of a running server is, and optionally open it.

    corebox console [--url URL] [--data-dir DIR] [--config FILE] [--open]

Prints the console's address (from `--url`, else `COREBOX_URL`, else the configured host
and port) once the server answers there, with where the Core key is kept; `--open` also
opens it in the default browser. The console asks for a key in the page: none is ever put
in the address.
"""

from __future__ import annotations

import argparse
import os
import urllib.error
import urllib.request
import webbrowser
from pathlib import Path
from typing import Any, TextIO

from allinone.config import ConfigError, load, server_url
from allinone.credentials import core_key_path

PROBE_SECONDS = 3.0


class ConsoleError(Exception):
    """The console's address could not be worked out, or nothing answers there."""


def add_commands(commands: Any) -> None:
    """Add the `console` command to the CLI's subparsers."""
    console = commands.add_parser("console", help="print (or --open) the console's address")
    console.add_argument(
        "--url", help="the server's base URL (default: $COREBOX_URL, else from the configuration)"
    )
    console.add_argument("--data-dir", dest="data_dir", help="the server's data directory")
    console.add_argument("--config", help="a corebox.toml file")
    console.add_argument("--open", action="store_true", help="open it in the default browser")


def address(args: argparse.Namespace) -> tuple[str, Path]:
    """The console's URL and the Core key's path, from the flags and the configuration."""
    flags = {"data_dir": args.data_dir, "config": args.config}
    try:
        config = load(flags, os.environ, Path.cwd())
        url = server_url(args.url, os.environ, config)
    except ConfigError as exc:
        raise ConsoleError(str(exc)) from exc
    return url + "/", core_key_path(config.data_dir)


def check(url: str) -> None:
    """Raise ConsoleError unless `url` answers with the console page."""
    try:
        with urllib.request.urlopen(url, timeout=PROBE_SECONDS) as response:
            page = response.read(4096)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise ConsoleError(f"{url} does not serve the corebox console (HTTP {exc.code})") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ConsoleError(f"nothing answers at {url}; start it with `corebox serve`") from exc
    if b"corebox console" not in page:
        raise ConsoleError(f"{url} does not serve the corebox console")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the console's address (and open it with --open); 1 when it is not there."""
    try:
        url, key_path = address(args)
        check(url)
    except ConsoleError as exc:
        print(f"corebox: error: {exc}", file=err)
        return 1
    print(f"corebox console: {url}", file=out)
    print(
        f"sign in with a project API key, or the Core key kept in {key_path}",
        file=out,
    )
    if args.open and not webbrowser.open(url):
        print("corebox: no browser could be opened here; open the address above", file=out)
    return 0
