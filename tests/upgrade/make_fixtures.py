"""Writes the upgrade fixtures: a data directory written by each earlier schema version.

    python tests/upgrade/make_fixtures.py COMMIT [COMMIT ...]

For each commit (the newest commit of a schema version), the tree at that commit is
unpacked with `git archive`, its own `corebox serve` runs on a fresh data directory,
and a scripted session is driven through its HTTP API: two turns, and an artifact where
that build supports one. What the old server then answers (items, turn statuses,
artifact digests) is saved as `schema_NNNN.json` beside `schema_NNNN.tar.gz` (the
database, checkpointed and vacuumed, with `secrets/`). A script, not a test.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KEY = "fixture-key"
HEADERS = {
    "Authorization": f"Bearer {KEY}",
    "OpenAI-Beta": "agents=v1",
    "Content-Type": "application/json",
}


def call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=HEADERS
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw = reply.read()
            kind = reply.headers.get("content-type", "")
            return reply.status, json.loads(raw) if "json" in kind else raw
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()
    except OSError:
        return 0, None


def wait(predicate: Any, what: str, seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def idle(port: int, session_id: str) -> None:
    def done() -> bool:
        status, body = call(port, "GET", f"/v1/agents/sessions/{session_id}")
        return status == 200 and body["status"] in ("idle", "failed")

    wait(done, f"session {session_id} to settle")


def drive(port: int, workspace: Path) -> list[str]:
    status, session = call(
        port,
        "POST",
        "/v1/agents/sessions",
        {"agent": {"model": "scripted"}, "environment": {"type": "none"}, "input": "hello"},
    )
    assert status == 200, session
    idle(port, session["id"])
    message = {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "/say second"}]}],
    }
    call(port, "POST", f"/v1/agents/sessions/{session['id']}/events", {"events": [message]})
    idle(port, session["id"])
    status, written = call(
        port,
        "POST",
        "/v1/agents/sessions",
        {
            "agent": {"model": "scripted"},
            "environment": {"type": "self_hosted", "workspace_directory": str(workspace)},
            "input": "/write outputs/report.txt carried across releases\n/say written",
        },
    )
    if status != 200:
        print(f"  no artifact session on this build: {status} {written!r:.200}")
        return [session["id"]]
    idle(port, written["id"])
    return [session["id"], written["id"]]


def picture(port: int, session_ids: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for sid in session_ids:
        _, items = call(port, "GET", f"/v1/agents/sessions/{sid}/items?limit=100&order=asc")
        _, turns = call(port, "GET", f"/v1/agents/sessions/{sid}/turns?limit=100&order=asc")
        status, artifacts = call(port, "GET", f"/v1/agents/sessions/{sid}/artifacts")
        digests = []
        for artifact in artifacts["data"] if status == 200 else []:
            _, body = call(
                port, "GET", f"/v1/agents/sessions/{sid}/artifacts/{artifact['id']}/content"
            )
            digests.append([artifact["path"], hashlib.sha256(body).hexdigest()])
        found[sid] = {
            "items": [
                [i["type"], i.get("role"), [p.get("text") for p in i.get("content") or []]]
                for i in items["data"]
            ],
            "turns": sorted([t["id"], t["status"]] for t in turns["data"]),
            "artifacts": sorted(digests),
        }
    return found


def make(commit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tree, data, workspace = work / "tree", work / "data", work / "workspace"
        tree.mkdir()
        workspace.mkdir()
        archive = subprocess.run(
            ["git", "archive", commit], cwd=ROOT, capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        version = max(int(p.name[:4]) for p in (tree / "storage" / "migrations").glob("0*.sql"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COREBOX_", "PYTHON"))}
        env.update(PYTHONPATH=str(tree), COREBOX_API_KEY=KEY, COREBOX_WORKSPACE_ROOTS=str(work))
        port = 18900 + version
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "allinone",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(data),
            ],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait(lambda: call(port, "GET", "/healthz")[0] == 200, "the old server")
            expected = picture(port, drive(port, workspace))
        finally:
            server.terminate()
            server.wait(30)
        conn = sqlite3.connect(data / "corebox.db")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
        name = f"schema_{version:04d}"
        with tarfile.open(HERE / "fixtures" / f"{name}.tar.gz", "w:gz") as out:
            out.add(data / "corebox.db", arcname="corebox.db")
            if (data / "secrets").is_dir():
                out.add(data / "secrets", arcname="secrets")
        document = {"commit": commit, "schema_version": version, "sessions": expected}
        (HERE / "fixtures" / f"{name}.json").write_text(
            json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        shutil.rmtree(tree)
        print(f"{name}: {len(expected)} sessions from {commit}")


if __name__ == "__main__":
    (HERE / "fixtures").mkdir(exist_ok=True)
    for commit in sys.argv[1:]:
        make(commit)
