"""`corebox doctor`: is this set-up healthy? A table of checks, a verdict, a fix for
each failure, and exit code 0 only when everything a session needs holds.

    corebox doctor                                   # the configuration `serve` would use
    corebox doctor --model-base-url http://127.0.0.1:11434/v1 --model llama3.2
    corebox doctor --url http://127.0.0.1:8800       # also ask a running server's /readyz

Without `--url` it checks the configuration without starting anything (and that the
port is free); with `--url` it adds the running server's readiness evidence, read with
the Core key from `<data-dir>/secrets/core.key`, instead of the port check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from allinone import doctor
from allinone.config import ConfigError, checked_url, load
from allinone.credentials import read_core_key
from allinone.doctor import Check

COMMAND = "doctor"
TIMEOUT_SECONDS = 15


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="check that a set-up is healthy (model, keys, workspaces, confinement, port)",
        description="Check a configuration without starting the server, or a running one"
        " with --url. Exit code 0 only when everything a session needs holds.",
    )
    parser.add_argument("--data-dir", dest="data_dir", help="the data directory to check")
    parser.add_argument("--config", help="a corebox.toml file")
    parser.add_argument("--host", help="the address serve would listen on")
    parser.add_argument("--port", type=int, help="the port serve would listen on")
    parser.add_argument("--model-base-url", dest="model_base_url", help="the model endpoint")
    parser.add_argument("--model", help="the model to ask for")
    parser.add_argument(
        "--model-protocol", dest="model_protocol", help="chat_completions or responses"
    )
    parser.add_argument(
        "--workspace-root", dest="workspace_roots", action="append", help="(repeatable)"
    )
    parser.add_argument("--url", help="a running server to ask as well, e.g. http://127.0.0.1:8800")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    keys = (
        "data_dir",
        "config",
        "host",
        "port",
        "model_base_url",
        "model",
        "model_protocol",
        "workspace_roots",
    )
    try:
        config = load({k: getattr(args, k) for k in keys}, os.environ, Path.cwd())
        url = checked_url(args.url, "--url") if args.url else None
    except ConfigError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2
    from allinone.app import host_confinement  # the Runtime's probe, wired by the root

    checks = doctor.local_checks(config, host_confinement())
    checks.append(doctor.model_check(config))
    checks.extend(doctor.mcp_checks(config.data_dir))
    if url:
        checks.extend(server_checks(url, config.data_dir))
    else:
        checks.append(doctor.port_check(config.host, config.port))
    healthy = doctor.passed(checks)
    if args.json:
        body = {"ok": healthy, "checks": [check.to_dict() for check in checks]}
        print(json.dumps(body, indent=2), file=out)
    else:
        print("\n".join(render(checks, healthy)), file=out)
    return 0 if healthy else 1


def server_checks(url: str, data_dir: Path) -> list[Check]:
    """The running server's `/readyz` evidence, one Check per check it reports."""
    try:
        key = read_core_key(data_dir)
    except OSError:
        return [
            Check("server", False, f"no Core key in {data_dir}", "pass the server's --data-dir")
        ]
    request = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
            body = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                body = json.loads(exc.read())
            except ValueError:
                return [Check("server", False, f"{url}/readyz answered HTTP {exc.code}", "")]
    except (urllib.error.URLError, OSError) as exc:
        return [
            Check(
                "server",
                False,
                f"{url} is unreachable: {doctor.failure(exc)}",
                "start `corebox serve` or correct --url",
            )
        ]
    return [_server_check(name, found) for name, found in body.get("checks", {}).items()]


def _server_check(name: str, found: dict[str, Any]) -> Check:
    ok = bool(found.get("ok"))
    detail = ", ".join(f"{k}={v}" for k, v in found.items() if k != "ok" and _scalar(v))
    fix = "" if ok else _SERVER_FIXES.get(name, "see the server's log")
    return Check(f"server {name}", ok, detail or ("ok" if ok else "failing"), fix)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


_SERVER_FIXES = {
    "storage": "free disk space or make the database writable, then retry",
    "runtime": "no Runtime is connected: start `corebox daemon` or serve with a local Runtime",
    "scheduler": "restart `corebox serve`",
    "setup": "run `corebox doctor` on the server's machine for the failing set-up check",
}


def render(checks: list[Check], healthy: bool) -> list[str]:
    """The table: one line per check, the fix under each failure, then the verdict."""
    width = max(len(check.name) for check in checks)
    lines = []
    for check in checks:
        mark = "ok  " if check.ok else ("FAIL" if check.required else "warn")
        lines.append(f"{mark}  {check.name.ljust(width)}  {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"      {' ' * width}  fix: {check.fix}")
    failed = [check.name for check in checks if not check.ok and check.required]
    warned = [check.name for check in checks if not check.ok and not check.required]
    if healthy:
        verdict = "healthy" + (f" (warnings: {', '.join(warned)})" if warned else "")
    else:
        verdict = f"not ready: {', '.join(failed)} failed"
    lines.append(f"verdict: {verdict}")
    return lines
