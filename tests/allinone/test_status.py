"""`corebox status` against a real running server, and when there is none."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from allinone import __version__
from tests.api.support import core_key, until
from tests.api.test_run_control import call, command, run_state, sdk, settled, start
from tests.conftest import ROOT, Server, free_port, start_server


def _status(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    """`corebox status ARGS`, with `COREBOX_URL` set to `url` when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    if url is not None:
        env["COREBOX_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "allinone", "status", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_status_shows_one_screen_about_a_running_server(server: Server) -> None:
    done = _status("--data-dir", str(server.data_dir), "--url", server.base_url)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(f"at {server.base_url}: ready"), done.stdout
    assert len(lines) <= 24
    shown = {line.split()[0]: line for line in lines[1:]}
    assert {"uptime", "runtimes", "turns", "storage", "overlays"} <= set(shown)
    # The in-process Runtime, under the device id it has on this server's database.
    devices = call(server, "GET", "/core/v1/devices", bearer=core_key(server.data_dir))
    [device] = [d["id"] for d in devices.body["data"] if d["connected"]]
    assert device.startswith("local-runtime"), device
    assert f"1 connected: {device} (builtin, scripted)" in shown["runtimes"]
    assert " active, " in shown["turns"] and shown["turns"].endswith(" queued")
    assert "schema" in shown["storage"]


def test_status_finds_the_server_at_corebox_url_unless_url_names_another(server: Server) -> None:
    with socket.socket() as held:  # bound, never listening: nothing answers there
        held.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{held.getsockname()[1]}"
        data = ("--data-dir", str(server.data_dir))
        found = _status(*data, url=server.base_url + "/")
        assert found.stdout.startswith(f"corebox {__version__} at {server.base_url}: ready"), found
        refused = _status(*data, url=nowhere)
        assert refused.returncode == 2
        assert f"cannot reach corebox at {nowhere} " in refused.stderr, refused.stderr
        assert "--url (or COREBOX_URL)" in refused.stderr
        named = _status(*data, "--url", server.base_url, url=nowhere)
        assert named.returncode == 0, named.stderr


def test_status_json_carries_the_owner_evidence(server: Server) -> None:
    done = _status("--data-dir", str(server.data_dir), "--url", server.base_url, "--json")
    body = json.loads(done.stdout)
    checks = body["readyz"]["checks"]
    assert checks["turns"]["queued"] >= 0 and checks["turns"]["active"] >= 0
    assert isinstance(checks["config"]["uptime_seconds"], int)
    assert checks["storage"]["bytes"] > 0
    assert body["projects"] >= 1


def test_status_without_a_server_says_so(server: Server, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    done = _status("--data-dir", str(server.data_dir), "--url", dead)
    assert done.returncode == 2
    assert f"cannot reach corebox at {dead}" in done.stderr


@contextmanager
def _hanging_turn(tmp_path: Path) -> Iterator[tuple[Server, OpenAI, str, tuple[str, ...]]]:
    """A server of the test's own with one running turn that waits; its session, and the
    arguments that point `corebox status` at it."""
    server = start_server(tmp_path / "data")
    where = ("--data-dir", str(server.data_dir), "--url", server.base_url)
    try:
        with sdk(server) as client:
            yield server, client, start(client, "/say a\n/hang"), where
    finally:
        server.stop()


def _turns_line(where: tuple[str, ...]) -> tuple[int, str]:
    done = _status(*where)
    shown = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    return done.returncode, shown["turns"].split(None, 1)[1]


def _counted(where: tuple[str, ...]) -> dict[str, Any]:
    counted: dict[str, Any] = json.loads(_status(*where, "--json").stdout)["readyz"]["checks"]
    return counted["turns"]


def test_status_says_how_many_turns_wait_for_a_resume(tmp_path: Path) -> None:
    with _hanging_turn(tmp_path) as (server, _, session_id, where):
        before = _counted(where)
        assert (before["active"], before["paused"]) == (1, 0)
        paused = command(server, session_id, "pause")
        assert settled(server, paused.json()["id"])["status"] == "applied"
        assert _turns_line(where) == (
            0,
            "1 active, 0 queued, 1 of them paused (`corebox sessions resume <session>`)",
        )
        after = _counted(where)
        assert (after["active"], after["queued"], after["paused"]) == (1, 0, 1)
        resumed = command(server, session_id, "resume")
        assert settled(server, resumed.json()["id"])["status"] == "applied"
        assert _counted(where)["paused"] == 0


def test_status_says_how_many_turns_a_drain_suspended_at_a_checkpoint(tmp_path: Path) -> None:
    with _hanging_turn(tmp_path) as (server, client, session_id, where):
        drained = call(server, "POST", "/core/v1/drain", {}, bearer=core_key(server.data_dir))
        assert drained.status_code == 202, drained.body
        until(lambda: run_state(client, session_id)["phase"] == "resuming", 60)
        assert _turns_line(where) == (  # exit code 1: draining, not ready
            1,
            "1 active, 0 queued, 1 of them suspended at a checkpoint, continued on the next start",
        )
        counted = _counted(where)
        assert counted == {"ok": True, "active": 1, "queued": 0, "paused": 0, "resuming": 1}
        paused = command(server, session_id, "pause")
        assert settled(server, paused.json()["id"])["status"] == "applied"
        again = _counted(where)
        assert again == {"ok": True, "active": 1, "queued": 0, "paused": 1, "resuming": 0}


def test_status_names_each_active_overlay_by_kind_value_and_scope(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        where = ("--data-dir", str(server.data_dir), "--url", server.base_url)
        owner = core_key(server.data_dir)
        projects = call(server, "GET", "/core/v1/projects", bearer=owner).body["data"]
        project_id = projects[0]["id"]
        assert projects[0]["name"] == "Default project"
        with sdk(server) as client:
            agent_id = client.beta.agents.create(model="scripted").id
        ids = []
        for kind, value, scope in (
            ("egress", "loopback_only", None),
            ("tool_disabled", "run_command", agent_id),
            ("kill_switch", "pause", agent_id),
        ):
            body = {"kind": kind, "value": value, "project_id": project_id, "reason": "demo"}
            body["agent_id"] = scope
            reply = call(server, "POST", "/core/v1/overlays", body, bearer=owner)
            assert reply.status_code == 200, reply.body
            ids.append(reply.body["id"])
        shown = {line.split()[0]: line for line in _status(*where).stdout.splitlines()[1:]}
        # The project by its name (overlays are listed with commas, so the name is quoted);
        # a kill switch with the command that lifts it.
        assert shown["overlays"].split(None, 1)[1] == (
            'egress=loopback_only on project "Default project", tool_disabled=run_command on'
            f' agent {agent_id} in project "Default project", kill_switch=pause on agent'
            f' {agent_id} in project "Default project" (lift: `corebox overlays clear'
            f" {ids[2]} --resume`)"
        )
    finally:
        server.stop()


@pytest.mark.parametrize("command", ["status", "sessions list", "projects list", "doctor"])
def test_an_address_without_its_scheme_is_refused_in_one_line(server: Server, command: str) -> None:
    # `127.0.0.1:8800` for `http://127.0.0.1:8800` is the usual slip: one line naming the
    # option and the form it takes, never a traceback, nor a "cannot reach" that blames
    # a server which is running.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    data = ["--data-dir", str(server.data_dir)]
    bare = server.base_url.removeprefix("http://")
    for flags, named in (([*data, "--url", bare], "--url"), (data, "COREBOX_URL")):
        done = subprocess.run(
            [sys.executable, "-m", "allinone", *command.split(), *flags],
            env={**env, "COREBOX_URL": bare} if named == "COREBOX_URL" else env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if command == "doctor" and named == "COREBOX_URL":
            continue  # doctor reads only --url: without it, it checks the configured port
        assert done.returncode in (1, 2), done
        assert done.stderr == (
            f"corebox: error: {named} must be an http:// or https:// address, such as"
            f" http://127.0.0.1:8800; got {bare!r}\n"
        ), done.stderr
