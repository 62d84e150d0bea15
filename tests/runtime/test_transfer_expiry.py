"""An abandoned transfer expires: the real daemon against a scripted Core, with the
transfer body wait shortened through the Runtime's timers. The transfer ends with its
finite `rejected` reply, nothing is applied, and the connection's one transfer slot is
free for the next transfer."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto.version import VERSION
from runtime.timers import Timers
from runtime.workspaces import Workspaces
from tests.contract.controlled import Signal
from tests.contract.scripted_core import CorePeer, ScriptedCore

DEVICE = "expiry-device"
CREDENTIAL = "expiry-credential"
ENVIRONMENT = "0b7d1c52-6f6e-4c1e-9d43-5f1a8f1f2a01"
SESSION = "6a1e3f0c-8d52-4b7e-a1c9-2e4f5d6a7b02"
ABANDONED = "7c2a4e10-3b5d-4f6e-8a9b-1c2d3e4f5a01"
NEXT = "7c2a4e10-3b5d-4f6e-8a9b-1c2d3e4f5a02"
PREPARE = "7c2a4e10-3b5d-4f6e-8a9b-1c2d3e4f5a03"
BODY = b"0123456789"
WAIT = 15.0


def frame(type_: str, id_: str, payload: dict[str, Any]) -> str:
    return json.dumps({"type": type_, "id": id_, "payload": payload})


def begin(path: str) -> dict[str, Any]:
    return {
        "step": "begin",
        "environment_id": ENVIRONMENT,
        "session_id": SESSION,
        "path": path,
        "size_bytes": len(BODY),
        "sha256": hashlib.sha256(BODY).hexdigest(),
    }


async def read_prepared(peer: CorePeer) -> None:
    configuration = {
        "agent_kind": "scripted",
        "agent_options": {"model": "scripted"},
        "execution_controls": {
            "web_search": "disabled",
            "text_verbosity": "medium",
            "disable_programmatic_tool_calling": True,
        },
        "disable_subagents": True,
        "local_environment": {"id": ENVIRONMENT, "type": "openai_hosted"},
        "workspace_read_only": True,
    }
    payload = {"session_id": "session", "configuration": configuration}
    await peer.send(frame("execution_prepare", "read", payload))
    status = await peer.next_frame()
    assert status["payload"]["state"] == "ready", status


def test_an_abandoned_transfer_expires_and_frees_the_slot(tmp_path: Path) -> None:
    async def main() -> None:
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            harnesses = HarnessRegistry()
            harnesses.register(ScriptedHarness())
            daemon = Daemon(
                core.core_url,
                DEVICE,
                CREDENTIAL,
                harnesses,
                "test",
                workspaces=Workspaces(tmp_path),
                timers=Timers(transfer_body_wait=0.05),
            )
            task = asyncio.create_task(daemon.run())
            try:
                peer = await core.next_peer()
                await peer.first_heartbeat()
                await read_prepared(peer)
                await peer.send(frame("workspace_write", ABANDONED, begin("a.txt")))
                assert await peer.next_frame() == frame_dict(
                    "workspace_write_result", ABANDONED, {"outcome": "ready"}
                )
                chunk = {"step": "chunk", "data": base64.b64encode(BODY[:4]).decode()}
                await peer.send(frame("workspace_write", ABANDONED, chunk))
                received = {"outcome": "received", "offset": 4}
                assert await peer.next_frame() == frame_dict(
                    "workspace_write_result", ABANDONED, received
                )
                # Core sends nothing more: the transfer expires with its finite reply.
                rejected = {"outcome": "rejected", "error_code": "invalid_request"}
                assert await peer.next_frame() == frame_dict(
                    "workspace_write_result", ABANDONED, rejected
                )
                # The slot is free: the next transfer begins (no write_capacity).
                await peer.send(frame("workspace_write", NEXT, begin("b.txt")))
                assert await peer.next_frame() == frame_dict(
                    "workspace_write_result", NEXT, {"outcome": "ready"}
                )
                assert await peer.next_frame() == frame_dict(
                    "workspace_write_result", NEXT, rejected
                )
                # An abandoned initialization transfer expires the same way.
                file_begin = {**begin(""), "action": "file", "file": {"path": "/workspace/c"}}
                del file_begin["path"]
                await peer.send(frame("runtime_prepare", PREPARE, file_begin))
                assert await peer.next_frame() == frame_dict(
                    "runtime_prepare_result", PREPARE, {"outcome": "ready"}
                )
                assert await peer.next_frame() == frame_dict(
                    "runtime_prepare_result", PREPARE, rejected
                )
                await peer.expect_silence()
                assert not any(tmp_path.joinpath(ENVIRONMENT).rglob("*.txt"))
                assert not core.all_violations(), core.all_violations()
            finally:
                await daemon.stop()
                await asyncio.wait_for(task, WAIT)

    asyncio.run(main())


def frame_dict(type_: str, id_: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "id": id_, "payload": payload}
