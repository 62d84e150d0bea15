"""How the examples reach a local corebox.

The key, the first of: `COREBOX_API_KEY`; `OPENAI_API_KEY` with `OPENAI_BASE_URL`, which
the banner's `next` line exports; the default project's key file that the first
`make run` saved (`$XDG_DATA_HOME/corebox/default-project.key`, else under
`~/.local/share`).

The API's address, the first of: `COREBOX_BASE_URL`; `OPENAI_BASE_URL`; `COREBOX_URL`
(the server's address, as the `corebox` commands take it) with `/v1`;
`http://127.0.0.1:8800/v1`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from openai import APIConnectionError, APIStatusError, OpenAI

DEFAULT_BASE_URL = "http://127.0.0.1:8800/v1"
HOW = (
    "no corebox key found: run the banner's `export OPENAI_BASE_URL=... OPENAI_API_KEY=...`"
    " line, or set COREBOX_API_KEY to the key corebox printed at first start"
)


def client() -> OpenAI | None:
    """A client for corebox, or None (and how to give a key, on stderr) when there is no key."""
    base_url = _base_url()
    key = os.environ.get("COREBOX_API_KEY")
    if key:
        return OpenAI(base_url=base_url, api_key=key)
    if os.environ.get("OPENAI_BASE_URL") and os.environ.get("OPENAI_API_KEY"):
        return OpenAI(base_url=base_url)
    saved = _default_data_dir() / "default-project.key"
    if saved.is_file():
        return OpenAI(base_url=base_url, api_key=saved.read_text().strip())
    print(HOW, file=sys.stderr)
    return None


def _base_url() -> str:
    """The API's address (see the module's docstring)."""
    for name in ("COREBOX_BASE_URL", "OPENAI_BASE_URL"):
        if os.environ.get(name):
            return os.environ[name]
    server = os.environ.get("COREBOX_URL")
    return f"{server.rstrip('/')}/v1" if server else DEFAULT_BASE_URL


def run(main: Callable[[], int]) -> int:
    """`main()`'s exit status, or 1 with one line on stderr when corebox does not answer
    or refuses a request (instead of the SDK's traceback)."""
    try:
        return main()
    except APIConnectionError as exc:
        url = exc.request.url
        print(
            f"corebox is not answering at {url.scheme}://{url.netloc.decode()}: start it with"
            " `make run` (or `corebox serve`) and run this again",
            file=sys.stderr,
        )
    except APIStatusError as exc:
        body = exc.body
        said = body.get("message") if isinstance(body, dict) else None
        print(f"corebox answered {exc.status_code}: {said or exc.message}", file=sys.stderr)
    return 1


def _default_data_dir() -> Path:
    """Where `corebox serve` keeps its state when not told otherwise."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "corebox"
