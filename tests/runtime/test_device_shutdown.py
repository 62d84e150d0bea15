"""`device_shutdown` (Core -> Runtime) against the real daemon with the controlled
adapter and a scripted Core: the Runtime admits nothing new, closes the connection,
settles its Run and closes its Executor without fabricating `done`, and does not
reconnect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.scenarios import Adapter, fixture
from runtime.proto.version import VERSION
from runtime.workspaces import Workspaces
from tests.contract.controlled import ControlledHarness, Signal
from tests.contract.scripted_core import CorePeer, ScriptedCore

WAIT = 15.0
PREPARE = {
    "session_id": "session",
    "configuration": {
        "agent_kind": "contract",
        "agent_options": {"model": "fixture-model"},
        "execution_controls": {
            "web_search": "disabled",
            "text_verbosity": "medium",
            "disable_programmatic_tool_calling": True,
        },
        "disable_subagents": True,
        "disable_execution_environment": True,
    },
}


def frame(type_: str, id_: str, payload: dict[str, Any]) -> str:
    return json.dumps({"type": type_, "id": id_, "payload": payload})


async def started(peer: CorePeer) -> None:
    """Prepare and start one Run (the fixture's `started` prefix, by hand)."""
    await peer.send(frame("execution_prepare", "prepare", PREPARE))
    states = [(await peer.next_frame())["payload"] for _ in range(2)]
    assert [s["state"] for s in states] == ["preparing", "ready"], states
    start = {
        "executor_id": states[1]["executor_id"],
        "handle": states[1]["handle"],
        "run_id": "run",
        "input": [{"content": [{"type": "input_text", "text": "hello"}]}],
    }
    await peer.send(frame("execution_start", "prepare", start))
    states = [(await peer.next_frame())["payload"] for _ in range(2)]
    assert [s["state"] for s in states] == ["starting", "started"], states


def test_device_shutdown_settles_work_closes_and_stops_reconnecting(tmp_path: Path) -> None:
    async def main() -> None:
        setup = fixture()
        signal = Signal()
        declaration = msgspec.convert(setup.capabilities, AgentKindCapabilities)
        harness = ControlledHarness(setup.agent_kind, declaration, Adapter(), signal)
        registry = HarnessRegistry()
        registry.register(harness)
        async with ScriptedCore(setup.device_id, setup.credential, VERSION, signal) as core:
            daemon = Daemon(
                core.core_url,
                setup.device_id,
                setup.credential,
                registry,
                "test",
                workspaces=Workspaces(tmp_path),
            )
            task = asyncio.create_task(daemon.run())
            try:
                peer = await core.next_peer()
                await peer.first_heartbeat()
                await started(peer)
                await peer.send(frame("device_shutdown", "", {"reason": "operator"}))
                # A prepare racing the shutdown is refused, never admitted.
                await peer.send(frame("execution_prepare", "late", PREPARE))
                harness.settle()  # the Run's native cancellation may finish
                await asyncio.wait_for(task, WAIT)  # run() returns: no reconnect
                await asyncio.wait_for(peer.closed.wait(), WAIT)
                sent = []
                while not peer.frames.empty():
                    item = peer.frames.get_nowait()
                    if item is not None:
                        sent.append(item)
                assert all(f["type"] not in ("done", "error") for f in sent), sent
                assert all(f["payload"].get("state") != "preparing" for f in sent), sent
                snapshot = harness.snapshot()
                assert (snapshot["setups"], snapshot["cancelled"], snapshot["owned"]) == (1, 1, 0)
                assert (core.bootstraps, core.accepted) == (1, 1)
                assert not core.all_violations(), core.all_violations()
            finally:
                harness.release_everything()
                await daemon.stop()
                await asyncio.wait_for(task, WAIT)

    asyncio.run(main())
