"""The set-up checks behind `corebox doctor` and the `setup` evidence of `/readyz`.

Each check inspects one thing a session needs and returns a `Check`: its name, whether
it holds, what was found, and, when it does not hold, the one fix to apply. A check
that fails with `required=False` is a warning: sessions still run, with less (no
confinement, a workspace root that does not exist yet). Nothing here changes the data
directory: the database is opened read-only and no file is created.

`local_checks` are the file-system checks (data directory, database, secrets, workspace
roots, confinement, clock); `serving_checks` the cheap subset a running server repeats
for every `/readyz` with the Core key; `model_check` sends one real,
minimal request to the configured model endpoint; `port_check` tries to bind the
configured address.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sqlite3
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from allinone.config import Config
from allinone.credentials import CORE_KEY_FILE, KEY_FILE, SECRETS_DIR, VAULT_KEY_FILE
from storage import migrations

DATABASE_FILE = "corebox.db"
MODEL_TIMEOUT_SECONDS = 15.0
# No clock that runs corebox is earlier than the day this check was written.
EARLIEST_SANE_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def passed(checks: Iterable[Check]) -> bool:
    """Whether everything a session needs holds (warnings do not count)."""
    return all(check.ok or not check.required for check in checks)


def _private(mode: int) -> bool:
    return mode & (stat.S_IRWXG | stat.S_IRWXO) == 0


def data_dir_check(data_dir: Path) -> Check:
    name = "data directory"
    if not data_dir.exists():
        parent = next((p for p in data_dir.parents if p.exists()), Path("/"))
        if os.access(parent, os.W_OK | os.X_OK):
            return Check(name, True, f"{data_dir} will be created at first start (mode 0700)")
        return Check(
            name,
            False,
            f"{data_dir} cannot be created",
            f"make {parent} writable or choose another --data-dir",
        )
    if not data_dir.is_dir():
        return Check(name, False, f"{data_dir} is not a directory", "choose another --data-dir")
    if not os.access(data_dir, os.W_OK | os.X_OK):
        return Check(name, False, f"{data_dir} is not writable", f"chown or chmod u+rwx {data_dir}")
    if not _private(data_dir.stat().st_mode):
        # Sessions still run; what they store is exposed to other local users.
        return Check(
            name, False, f"{data_dir} is readable by others", f"chmod 700 {data_dir}", False
        )
    return Check(name, True, f"{data_dir} (private, writable)")


_DAMAGED = "restore it from a backup, or move it aside to start afresh"


def database_check(data_dir: Path) -> Check:
    name = "database"
    path = data_dir / DATABASE_FILE
    newest = migrations.available()[-1][0]
    if not path.exists():
        return Check(name, True, f"created at first start (schema {newest})")
    try:
        version = int(_read_only(path, "SELECT max(version) FROM schema_version") or 0)
        damage = _read_only(path, "PRAGMA quick_check(1)")
    except sqlite3.Error as exc:
        return Check(name, False, f"{path} cannot be read: {exc}", _DAMAGED)
    if damage != "ok":  # SQLite's quick check names the first damage it found
        return Check(name, False, f"{path} is damaged: {damage}", _DAMAGED)
    if version > newest:
        return Check(
            name,
            False,
            f"schema {version} was written by a newer corebox (this one knows {newest})",
            "run the newer corebox",
        )
    if version < newest:
        return Check(name, True, f"schema {version}; migrates to {newest} at the next start")
    return Check(name, True, f"{path} (schema {version}, current)")


def secrets_check(data_dir: Path) -> Check:
    name = "secrets"
    files = [data_dir / SECRETS_DIR / CORE_KEY_FILE, data_dir / SECRETS_DIR / VAULT_KEY_FILE]
    files += [data_dir / KEY_FILE] if (data_dir / KEY_FILE).exists() else []
    found = [path for path in files if path.exists()]
    if not found:
        return Check(name, True, "created at first start (mode 0600)")
    for path in found:
        if not os.access(path, os.R_OK):
            return Check(name, False, f"{path} is not readable", f"chown {path} to this user")
        if not _private(path.stat().st_mode):
            return Check(name, False, f"{path} is readable by others", f"chmod 600 {path}")
        if not path.read_text(encoding="utf-8").strip():
            return Check(name, False, f"{path} is empty", f"delete {path} to generate a new one")
    return Check(name, True, f"{len(found)} key file(s), mode 0600")


def workspace_roots_check(roots: Iterable[Path]) -> Check:
    name = "workspace roots"
    roots = list(roots)
    missing = [root for root in roots if not root.is_dir()]
    if missing:
        return Check(
            name,
            False,
            f"{missing[0]} does not exist",
            f"mkdir -p {missing[0]}, or pass the directories you work in with --workspace-root",
            required=False,
        )
    locked = [root for root in roots if not os.access(root, os.W_OK | os.X_OK)]
    if locked:
        return Check(
            name,
            False,
            f"{locked[0]} is not writable",
            f"chmod u+rwx {locked[0]} or choose another --workspace-root",
        )
    return Check(name, True, ", ".join(str(root) for root in roots) or "(none)")


def confinement_check(found: Mapping[str, Any]) -> Check:
    """`found` is the host's confinement as the Runtime describes it (`kind`, `abi`)."""
    if found.get("kind", "none") == "none":
        return Check(
            "confinement",
            False,
            "neither Landlock nor bubblewrap is available: commands run only for trusted projects",
            "install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock",
            required=False,
        )
    return Check("confinement", True, " ".join(str(v) for v in found.values()))


def clock_check(data_dir: Path, now: float | None = None, *, use_database: bool = True) -> Check:
    """The clock is after a fixed date and not behind the database's newest record."""
    now = time.time() if now is None else now
    if now < EARLIEST_SANE_TIME:
        return Check("clock", False, f"the clock says {time.ctime(now)}", "set the system clock")
    newest = _newest_record(data_dir / DATABASE_FILE) if use_database else None
    if newest is not None and newest > now + 60:
        return Check(
            "clock",
            False,
            "the clock is behind the newest record in the database",
            "set the system clock (ids and pagination need it to move forward)",
        )
    return Check("clock", True, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))


def _newest_record(path: Path) -> int | None:
    """The newest session's creation time (seconds), if the database has one."""
    if not path.exists():
        return None
    try:
        newest = _read_only(path, "SELECT max(created_at) FROM sessions")
    except sqlite3.Error:
        return None
    return None if newest is None else int(newest)


def _open_read_only(path: Path) -> sqlite3.Connection:
    """`path` opened so that nothing can change it (a relative path too)."""
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)


def _read_only(path: Path, sql: str) -> Any:
    """The first column of the first row of `sql`, read without changing the file."""
    with contextlib.closing(_open_read_only(path)) as conn:
        row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def local_checks(config: Config, confinement: Mapping[str, Any]) -> list[Check]:
    """Every file-system check, the database's integrity included (`corebox doctor`)."""
    data_dir = config.data_dir
    return [
        data_dir_check(data_dir),
        database_check(data_dir),
        secrets_check(data_dir),
        workspace_roots_check(config.workspace_roots),
        confinement_check(confinement),
        clock_check(data_dir),
    ]


def serving_checks(config: Config) -> list[Check]:
    """The checks a running server repeats for `/readyz`: cheap, and none of them reads
    the database, whose own evidence is the storage check."""
    return [
        data_dir_check(config.data_dir),
        secrets_check(config.data_dir),
        workspace_roots_check(config.workspace_roots),
        clock_check(config.data_dir, use_database=False),
    ]


def mcp_checks(data_dir: Path) -> list[Check]:
    """One check per MCP server the saved agents name: does its address accept a
    connection? (What a session's tools need before any credential is presented.)"""
    urls = sorted(_mcp_urls(data_dir / DATABASE_FILE))
    if not urls:
        return [Check("mcp servers", True, "none configured")]
    return [_mcp_check(url) for url in urls]


def _mcp_urls(path: Path) -> set[str]:
    if not path.exists():
        return set()
    try:
        with contextlib.closing(_open_read_only(path)) as conn:
            rows = conn.execute("SELECT config FROM agents WHERE deleted_at IS NULL").fetchall()
    except sqlite3.Error:
        return set()
    found: set[str] = set()
    for (config,) in rows:
        with contextlib.suppress(ValueError):
            _collect_urls(json.loads(config), found)
    return found


def _collect_urls(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        url = value.get("server_url")
        if isinstance(url, str):
            found.add(url)
        for child in value.values():
            _collect_urls(child, found)
    elif isinstance(value, list):
        for child in value:
            _collect_urls(child, found)


def failure(exc: OSError) -> str:
    """A connection's failure in words (`connection refused`), not `[Errno 111] ...`.
    Here, not beside the commands that also use it: `serve` imports this module, and no
    other command's."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    detail = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
    return detail.lower()


def _mcp_check(url: str) -> Check:
    name = f"mcp {url}"
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=5):
            pass
    except OSError as exc:
        return Check(
            name,
            False,
            f"unreachable: {failure(exc)}",
            "start that MCP server, or change the agents that name it",
        )
    return Check(name, True, "accepts connections")


def port_check(host: str, port: int) -> Check:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return Check(
                    "port",
                    False,
                    f"{host}:{port} is in use",
                    "stop what listens"
                    " there (a running corebox: use `corebox doctor --url`) or pass"
                    " --port",
                )
            return Check(
                "port",
                False,
                f"cannot listen on {host}:{port}: {exc.strerror}",
                "pass another --host or --port",
            )
    return Check("port", True, f"{host}:{port} is free")


def model_check(config: Config) -> Check:
    """One real, minimal request to the model endpoint with the configured model."""
    name = "model endpoint"
    if config.model_base_url is None:
        return Check(
            name, True, "not configured: the scripted harness only (builtin needs --model-base-url)"
        )
    base = config.model_base_url.rstrip("/")
    model = config.model or ""
    prompt = "Reply with OK."
    if config.model_protocol == "responses":
        url, body = f"{base}/responses", {"model": model, "input": prompt, "max_output_tokens": 16}
    else:
        # No token limit: some endpoints refuse `max_tokens` and others its successor.
        messages = [{"role": "user", "content": prompt}]
        url, body = f"{base}/chat/completions", {"model": model, "messages": messages}
    headers = {"Content-Type": "application/json"}
    if config.model_api_key:
        headers["Authorization"] = f"Bearer {config.model_api_key}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=MODEL_TIMEOUT_SECONDS) as reply:
            reply.read()
    except urllib.error.HTTPError as exc:
        exc.close()
        return Check(
            name, False, f"{url} answered HTTP {exc.code} for model {model!r}", _model_fix(exc.code)
        )
    except (urllib.error.URLError, OSError) as exc:
        return Check(
            name,
            False,
            f"{url} is unreachable: {failure(exc)}",
            "start the model server, or correct --model-base-url (e.g. http://127.0.0.1:11434/v1)",
        )
    return Check(name, True, f"{base} answers for model {model!r}")


def _model_fix(code: int) -> str:
    if code in (401, 403):
        return "set COREBOX_MODEL_API_KEY to a key the model server accepts"
    if code == 404:
        return "check --model (the server does not know it) and --model-protocol"
    return "check the model server's own log"
