"""`corebox status`: one screen about a running server, read from its `/readyz` evidence
and its `/core/v1` API with the Core key from `<data-dir>/secrets/core.key`.

    corebox status                       # the server the configuration names
    corebox status --url http://127.0.0.1:8800 --json

Shows whether it is ready, its uptime, the connected Runtimes and what they run, the
active and queued turns and how many of them are paused or suspended at a checkpoint
until a Runtime claims them again (after a drain, a lost Runtime or a resume), the
storage size, the projects, the set-up checks and the safety overlays in force (when
the server reports them). Exit code 0 when the server is ready, 1 when it answers but
is not, 2 when it cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any, TextIO

from allinone import admin

COMMAND = "status"


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="one screen about a running server (needs a running server)",
        description="Uptime, Runtimes, turns, storage and set-up of a running server.",
    )
    admin.server_options(parser)
    parser.add_argument("--json", action="store_true", help="print the evidence as JSON")


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        client = admin.client_for(args)
        ready = readiness(client)
        projects = client.all_pages("/projects")
    except admin.AdminError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"readyz": ready, "projects": len(projects)}, indent=2), file=out)
    else:
        names = {str(p["id"]): str(p.get("name") or "") for p in projects}
        print("\n".join(render(client.base_url, ready, names)), file=out)
    return 0 if ready.get("status") == "ready" else 1


def readiness(client: admin.CoreClient) -> dict[str, Any]:
    """The owner's `/readyz` body, whether the server is ready (200) or not (503)."""
    request = urllib.request.Request(
        f"{client.base_url}/readyz", headers={"Authorization": f"Bearer {client.core_key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=admin.TIMEOUT_SECONDS) as reply:
            body: dict[str, Any] = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:
            if exc.code != 503:
                raise admin.AdminError(f"/readyz answered HTTP {exc.code}") from exc
            body = json.loads(exc.read())
    except (urllib.error.URLError, OSError) as exc:
        raise admin.AdminError(admin.unreachable(client.base_url, exc)) from exc
    return body


def render(url: str, ready: dict[str, Any], projects: dict[str, str]) -> list[str]:
    """The screen's lines; `projects` names each project by id."""
    checks: dict[str, Any] = ready.get("checks", {})
    config, storage = checks.get("config", {}), checks.get("storage", {})
    state = "ready" if ready.get("status") == "ready" else f"NOT READY ({_missing(ready)})"
    lines = [f"corebox {ready.get('version', '?')} at {url}: {state}"]
    lines.append(f"  uptime      {_duration(config.get('uptime_seconds'))}")
    lines.append(f"  data        {config.get('data_dir', '?')}")
    lines.append(f"  runtimes    {_runtimes(checks.get('runtime', {}))}")
    draining = checks.get("drain", {}).get("ok") is False
    lines.append(f"  turns       {_turns(checks.get('turns', {}), draining)}")
    lines.append(
        f"  storage     {_size(storage.get('bytes'))}, schema {storage.get('schema_version', '?')}"
        f", {storage.get('latency_ms', '?')} ms" + ("" if storage.get("ok") else ", FAILING")
    )
    lines.append(f"  projects    {len(projects)}")
    confinement = checks.get("confinement", {})
    lines.append(f"  confinement {' '.join(str(v) for k, v in confinement.items() if k != 'ok')}")
    lines.append(f"  setup       {_setup(checks.get('setup'))}")
    lines.append(f"  overlays    {_overlays(checks.get('overlays'), projects)}")
    return lines


def _missing(ready: dict[str, Any]) -> str:
    return ", ".join(ready.get("missing", [])) or "unknown"


def _runtimes(runtime: dict[str, Any]) -> str:
    connected = runtime.get("connected", [])
    if not connected:
        return "none connected: start `corebox daemon` or serve with a local Runtime"
    shown = [f"{r['device_id']} ({', '.join(r['agent_kinds']) or 'undeclared'})" for r in connected]
    return f"{len(connected)} connected: " + "; ".join(shown)


def _turns(turns: dict[str, Any], draining: bool) -> str:
    shown = [f"{turns.get('active', '?')} active, {turns.get('queued', '?')} queued"]
    if paused := turns.get("paused"):
        shown.append(f"{paused} of them paused (`corebox sessions resume <session>`)")
    if resuming := turns.get("resuming"):
        then = "on the next start" if draining else "when a Runtime claims them"
        shown.append(f"{resuming} of them suspended at a checkpoint, continued {then}")
    return ", ".join(shown)


def _setup(setup: dict[str, Any] | None) -> str:
    if setup is None:
        return "not reported"
    failing = [c for c in setup.get("checks", []) if not c["ok"]]
    if not failing:
        return "ok"
    return "; ".join(f"{c['name']}: {c['detail']} (fix: {c['fix']})" for c in failing)


def _overlays(overlays: dict[str, Any] | None, projects: dict[str, str]) -> str:
    if overlays is None:
        return "not reported by this server"
    active = overlays.get("active", [])
    shown = [f"{o['kind']}={o['value']} on {_scope(o, projects)}{_lift(o)}" for o in active]
    return ", ".join(shown) if shown else "none"


def _lift(overlay: dict[str, Any]) -> str:
    """For a kill switch, which refuses all input while set: how to clear it (a pause
    one with the turns it paused resumed)."""
    if overlay["kind"] != "kill_switch":
        return ""
    resume = " --resume" if overlay["value"] == "pause" else ""
    return f" (lift: `corebox overlays clear {overlay['id']}{resume}`)"


def _scope(overlay: dict[str, Any], projects: dict[str, str]) -> str:
    """`project "<name>"` (its id when it has no name here), after `agent <id> in ` when
    the overlay is narrowed to an agent."""
    project_id = str(overlay["project_id"])
    name = projects.get(project_id)
    project = f"project {json.dumps(name, ensure_ascii=False)}" if name else project_id
    agent = overlay.get("agent_id")
    return f"agent {agent} in {project}" if agent else project


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int):
        return "?"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s"


def _size(count: Any) -> str:
    if not isinstance(count, int):
        return "?"
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
