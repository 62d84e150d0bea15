"""Runtimes elsewhere, end to end: `corebox serve --no-local-runtime`, a device from
`corebox devices create`, and a Runtime that is nothing but a raw WebSocket client
speaking JSON envelopes (plain `websockets`, no corebox imports), then the real
`corebox daemon`. The official SDK drives the public API.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from openai import OpenAI
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.conftest import API_KEY, ROOT, free_port
from tests.support.sdk import sdk_client

WAIT = 20.0
SILENCE = 0.08  # the one timed wait: nothing may arrive within it
HARNESS = "scripted"
# A complete capability declaration, every field an explicit boolean.
CAPABILITIES = {
    "subagent_observations": False,
    "streaming": True,
    "permissions": True,
    "usage": True,
    "resume": True,
    "native_session_recovery": True,
    "steering": True,
    "message_items": True,
    "tool_observations": True,
    "environment_none": True,
    "local_environment": False,
    "preparation": True,
    "workspace_read_preparation": False,
    "workspace_output_export": False,
    "programmatic_tool_calling_disable": True,
    "web_search_control": False,
    "execution_controls": True,
    "text_verbosity": False,
    "structured_output": False,
    "tool_search": False,
    "message_images": False,
    "function_result_images": False,
    "subagent_control": True,
    "durable_input_receipts": True,
    "durable_turns": True,
    "function_tools": True,
    "mcp_http_tools": False,
    "mcp_http_required": False,
    "mcp_http_bearer_auth": False,
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    env["COREBOX_API_KEY"] = API_KEY
    return env


def start_daemon(base_url: str, credential_file: str) -> subprocess.Popen[str]:
    """`corebox daemon` for a device of `base_url`, its errors readable from `stderr`."""
    return subprocess.Popen(
        [sys.executable, "-m", "allinone", "daemon", "--core", base_url,
         "--credential-file", credential_file],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
        text=True,
    )  # fmt: skip


def corebox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextmanager
def serve_core_only(data_dir: Path) -> Iterator[str]:
    """`corebox serve --no-local-runtime`; yields its base URL once it announced itself."""
    port = free_port()
    log = data_dir.parent / "serve.log"
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "allinone",
                "serve",
                "--no-local-runtime",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            env={**_env(), "COREBOX_WORKSPACE_ROOTS": str(data_dir.parent)},
            text=True,
        )
    watchdog = threading.Timer(WAIT * 3, process.kill)  # bounds the blocking read below
    watchdog.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:  # until the server announces itself or exits
            if "serving on port" in line:
                break
        else:
            raise AssertionError(f"serve exited with {process.wait()}: {log.read_text()}")
        watchdog.cancel()
        yield f"http://127.0.0.1:{port}"
        assert process.poll() is None, "the server crashed"
    finally:
        watchdog.cancel()
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
        text = log.read_text(encoding="utf-8", errors="replace")
        assert "Traceback" not in text, text


def http(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def new_device(base_url: str, data_dir: Path, name: str) -> dict[str, Any]:
    credential_file = data_dir.parent / f"{name}.credential"
    done = corebox(
        "devices",
        "create",
        name,
        "--data-dir",
        str(data_dir),
        "--url",
        base_url,
        "--credential-file",
        str(credential_file),
    )
    assert done.returncode == 0, done.stderr
    saved: dict[str, Any] = json.loads(credential_file.read_text())
    assert saved["credential"] not in done.stdout  # written once, not printed
    assert oct(credential_file.stat().st_mode & 0o777) == "0o600"
    saved["file"] = str(credential_file)
    return saved


class RawRuntime:
    """A Runtime written from the wire catalogue alone: JSON envelopes over websockets."""

    def __init__(self, base_url: str, device_id: str, credential: str) -> None:
        self.base_url = base_url
        self.device_id = device_id
        self.credential = credential
        self.ts = 0

    def bootstrap(self) -> tuple[int, Any]:
        return http(
            "POST",
            f"{self.base_url}/api/v1/agent-daemon/bootstrap",
            {"device_id": self.device_id},
            {"Authorization": f"Bearer {self.credential}"},
        )

    async def dial(self, version: str) -> ClientConnection:
        status, info = await asyncio.to_thread(self.bootstrap)
        assert status == 200, info
        query = urlencode({"device_id": self.device_id, "version": version})
        return await connect(
            f"{info['ws_url']}?{query}",
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            ping_interval=None,
            max_size=None,
        )

    def heartbeat(self, capabilities: dict[str, bool]) -> str:
        self.ts += 1
        kind = {"kind": HARNESS, "available": True, "capabilities": capabilities, "version": "1"}
        payload = {
            "ts": self.ts,
            "active_requests": 0,
            "home_removal": False,
            "supported_agent_kinds": [kind],
            "daemon_version": "raw-client",
        }
        return json.dumps({"type": "heartbeat", "payload": payload})


async def receive(ws: ClientConnection) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
    return frame


async def send(ws: ClientConnection, type_: str, id_: str, payload: dict[str, Any]) -> None:
    await ws.send(json.dumps({"type": type_, "id": id_, "payload": payload}))


async def silent(ws: ClientConnection) -> None:
    with suppress(TimeoutError):
        frame = await asyncio.wait_for(ws.recv(), SILENCE)
        raise AssertionError(f"Core sent {frame}")


async def closed_with(ws: ClientConnection) -> int | None:
    with suppress(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), WAIT)
    received = ws.protocol.close_rcvd
    return None if received is None else received.code


async def play_turn(ws: ClientConnection, text: str) -> str:
    """Answer one execution as a Runtime must: five steps, then the Run's frames."""
    prepare = await receive(ws)
    assert prepare["type"] == "execution_prepare", prepare
    config = prepare["payload"]["configuration"]
    assert config["agent_kind"] == HARNESS and config["disable_execution_environment"] is True
    expires = int(time.time() * 1000) + 300_000
    status = {"handle": "handle-1", "expires_at": expires}
    await send(
        ws, "preparation_status", prepare["id"], {"revision": 1, "state": "preparing"} | status
    )
    status["executor_id"] = "executor-1"
    await send(ws, "preparation_status", prepare["id"], {"revision": 2, "state": "ready"} | status)
    start = await receive(ws)
    assert start["type"] == "execution_start" and start["id"] == prepare["id"], start
    run_id = start["payload"]["run_id"]
    assert start["payload"]["handle"] == "handle-1"
    assert start["payload"]["executor_id"] == "executor-1"
    [message] = start["payload"]["input"]
    assert message["content"] == [{"type": "input_text", "text": "hello"}]
    status["run_id"] = run_id
    await send(
        ws, "preparation_status", prepare["id"], {"revision": 3, "state": "starting"} | status
    )
    await send(
        ws, "preparation_status", prepare["id"], {"revision": 4, "state": "started"} | status
    )
    item = {"id": "msg-1", "phase": "final_answer"}
    await send(ws, "output_message", run_id, item | {"status": "in_progress"})
    half = len(text) // 2
    await send(ws, "delta", run_id, {"item_id": "msg-1", "delta": text[:half], "sequence": 1})
    await send(ws, "delta", run_id, {"item_id": "msg-1", "delta": text[half:], "sequence": 2})
    await send(ws, "output_message", run_id, item | {"status": "completed", "text": text})
    await send(ws, "done", run_id, {})
    return str(run_id)


def sdk(base_url: str) -> OpenAI:
    return sdk_client(
        base_url=f"{base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        timeout=WAIT,
        _strict_response_validation=True,
    )


def scripted_session(client: OpenAI, text: str) -> list[Any]:
    """Create a session and stream its events until it is idle again."""
    return list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
        )
    )


def test_a_raw_websocket_runtime_runs_a_turn_for_core(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve_core_only(data_dir) as base_url:
        status, ready = http("GET", f"{base_url}/readyz")
        assert status == 503 and ready["missing"] == ["runtime"], ready
        device = new_device(base_url, data_dir, "raw")
        raw = RawRuntime(base_url, device["device_id"], device["credential"])
        asyncio.run(_raw_runtime(raw, base_url))
        status, ready = http("GET", f"{base_url}/readyz")
        assert status == 503 and ready["missing"] == ["runtime"], ready


async def _raw_runtime(raw: RawRuntime, base_url: str) -> None:
    status, info = await asyncio.to_thread(raw.bootstrap)
    assert status == 200 and info["device_id"] == raw.device_id
    version = info["protocol_version"]

    # Any version but the exact one: 426 before dispatch.
    for offered in (f"{version}-dev", f"{version}+build", f" {version}", f"{version}.0", "0.0.0"):
        with pytest.raises(InvalidStatus) as refused:
            await raw.dial(offered)
        assert refused.value.response.status_code == 426
        assert json.loads(refused.value.response.body)["error"] == "incompatible_version"

    # A heartbeat whose capability object omits one field closes the transport.
    ws = await raw.dial(version)
    incomplete = {k: v for k, v in CAPABILITIES.items() if k != "usage"}
    await ws.send(raw.heartbeat(incomplete))
    assert await closed_with(ws) == 1008

    # Malformed frames get no reply and do not break the connection.
    ws = await raw.dial(version)
    await ws.send(raw.heartbeat(CAPABILITIES))
    for garbage in ("{not json", "[1, 2]", '{"type": "no_such_type"}', '{"type": "done"}'):
        await ws.send(garbage)
    await silent(ws)

    # Prepare, start and complete a run on a scripted session created with the SDK.
    with sdk(base_url) as client:
        events_task = asyncio.create_task(asyncio.to_thread(scripted_session, client, "hello"))
        run_id = await play_turn(ws, "hello world")
        events = await asyncio.wait_for(events_task, WAIT)
        types = [e.type for e in events]
        assert types[-2:] == ["agent.session.turn.completed", "agent.session.idle"], types
        text = "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")
        assert text == "hello world"
        session_id = events[0].session.id
        items = client.beta.agents.sessions.items.list(session_id, order="asc").data
        assert [(i.role, i.content[0].text) for i in items] == [
            ("user", "hello"),
            ("assistant", "hello world"),
        ]
        turns = client.beta.agents.sessions.turns.list(session_id).data
        assert [t.id for t in turns] == [run_id] and turns[0].status == "completed"
    await silent(ws)

    # A frame above the 4 MiB limit closes the transport; Core stays up.
    await ws.send("x" * (4 * 1024 * 1024 + 1))
    assert await closed_with(ws) == 1009

    # After reconnecting, nothing is replayed.
    ws = await raw.dial(version)
    await ws.send(raw.heartbeat(CAPABILITIES))
    await silent(ws)
    status, _ = await asyncio.to_thread(
        http, "GET", f"{base_url}/core/v1/devices", None, {"Authorization": "Bearer nope"}
    )
    assert status == 401
    await ws.close()


def test_corebox_daemon_runs_turns_until_its_device_is_revoked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve_core_only(data_dir) as base_url:
        device = new_device(base_url, data_dir, "elsewhere")
        daemon = start_daemon(base_url, device["file"])
        try:
            with sdk(base_url) as client:  # the turn waits until the daemon has declared
                events = scripted_session(client, "from elsewhere")
            assert [e.type for e in events][-2:] == [
                "agent.session.turn.completed",
                "agent.session.idle",
            ]
            listed = corebox("devices", "list", "--data-dir", str(data_dir), "--url", base_url)
            assert listed.returncode == 0, listed.stderr
            assert f"{device['device_id']}\tactive\tconnected\telsewhere" in listed.stdout
            revoked = corebox(
                "devices", "revoke", device["device_id"], "--data-dir", str(data_dir),
                "--url", base_url,
            )  # fmt: skip
            assert revoked.returncode == 0, revoked.stderr
            assert f"{device['device_id']}\trevoked\t-\telsewhere" in revoked.stdout
            assert daemon.wait(timeout=WAIT) == 1  # 4001: permanent, no reconnect
            assert daemon.stderr is not None
            assert (
                f"the Runtime stopped: core at {base_url}/api/v1 revoked device "
                f"{device['device_id']}; a new credential comes from `corebox devices create`"
            ) in daemon.stderr.read()
            # Started again with that credential, it is refused as any unknown one is and
            # says what to check; Core logs the refusal, without the credential.
            again = corebox("daemon", "--core", base_url, "--credential-file", device["file"])
            assert again.returncode == 1
            assert "check the credential file and the device id" in again.stderr
            assert f"(the credential file is {device['file']})" in again.stderr
            served = (data_dir.parent / "serve.log").read_text()
            assert (
                f"runtime bootstrap from 127.0.0.1 refused for device '{device['device_id']}'"
                in served
            )
            assert device["credential"] not in served
            status, body = RawRuntime(
                base_url, device["device_id"], device["credential"]
            ).bootstrap()
            assert status == 401 and body["error"] == "unknown_device"
        finally:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(timeout=WAIT)
            if daemon.stderr is not None:
                daemon.stderr.close()


def test_corebox_daemon_serves_only_its_allowed_roots(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    served, elsewhere = tmp_path / "served" / "ws", tmp_path / "elsewhere"
    served.mkdir(parents=True)
    elsewhere.mkdir()
    with serve_core_only(data_dir) as base_url:
        device = new_device(base_url, data_dir, "rooted")
        relative = corebox(
            "daemon", "--core", base_url, "--credential-file", device["file"],
            "--allowed-root", "relative",
        )  # fmt: skip
        assert relative.returncode == 2 and "--allowed-root" in relative.stderr
        daemon = subprocess.Popen(
            [sys.executable, "-m", "allinone", "daemon", "--core", base_url,
             "--credential-file", device["file"], "--allowed-root", str(served.parent)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )  # fmt: skip
        try:
            with sdk(base_url) as client:
                for directory, status in ((served, "completed"), (elsewhere, "failed")):
                    events = list(
                        client.beta.agents.sessions.create(
                            agent={"model": "scripted"},
                            environment={
                                "type": "self_hosted",
                                "workspace_directory": str(directory),
                            },
                            input="/write made.txt here",
                            stream=True,
                        )
                    )
                    session_id = events[0].session.id
                    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
                    assert turn.status == status, directory
            assert (served / "made.txt").read_text() == "here"
            assert not (elsewhere / "made.txt").exists()
        finally:
            daemon.terminate()
            daemon.wait(timeout=WAIT)
