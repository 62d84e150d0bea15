"""Shutdown keeps ownership of what it could not clean up, retrying serially."""

from __future__ import annotations

import asyncio

import msgspec

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.proto import codec
from runtime.proto import execution as wire
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.scenarios import Adapter, fixture
from runtime.proto.version import VERSION
from tests.contract.controlled import ControlledHarness, Signal
from tests.contract.scripted_core import CorePeer, ScriptedCore

WAIT = 10.0


async def _prepared(peer: CorePeer, kind: str) -> None:
    """Have the Runtime create one Executor (then leave it idle)."""
    request = wire.ExecutionPrepare(
        session_id="session",
        configuration=wire.ExecutionConfiguration(
            agent_kind=kind,
            agent_options=wire.AgentOptions(model="m"),
            execution_controls=wire.ExecutionControls(
                web_search="disabled",
                text_verbosity="medium",
                disable_programmatic_tool_calling=True,
            ),
            disable_execution_environment=True,
        ),
    )
    await peer.send(codec.encode(request, "prepare").decode())
    while True:
        frame = await asyncio.wait_for(peer.next_frame(), WAIT)
        if frame["type"] == "preparation_status" and frame["payload"]["state"] == "ready":
            return


def _setup(signal: Signal) -> tuple[ControlledHarness, HarnessRegistry]:
    shared = fixture()
    declaration = msgspec.convert(shared.capabilities, AgentKindCapabilities)
    harness = ControlledHarness(shared.agent_kind, declaration, Adapter(close="fails"), signal)
    registry = HarnessRegistry()
    registry.register(harness)
    return harness, registry


def test_stop_retries_a_failed_cleanup_until_it_settles() -> None:
    async def main() -> None:
        signal = Signal()
        harness, registry = _setup(signal)
        shared = fixture()
        async with ScriptedCore(shared.device_id, shared.credential, VERSION, signal) as core:
            daemon = Daemon(
                core.core_url,
                shared.device_id,
                shared.credential,
                registry,
                "t",
                sleep=harness.retry_sleep,
            )
            task = asyncio.create_task(daemon.run())
            peer = await core.next_peer()
            await peer.first_heartbeat()
            await _prepared(peer, shared.agent_kind)
            stopping = asyncio.create_task(daemon.stop(cleanup_deadline=WAIT))
            assert await signal.until(lambda: harness.close_attempts == 1)
            assert harness.owned == 1  # the failed close kept ownership
            harness.close_fails = False
            harness.close_allowed.set()  # the next serialized retry may now succeed
            assert await asyncio.wait_for(stopping, WAIT) is True
            assert (harness.close_attempts, harness.closes, harness.owned) == (2, 1, 0)
            await asyncio.wait_for(task, WAIT)

    asyncio.run(main())


def test_stop_reports_cleanup_it_could_not_confirm() -> None:
    async def main() -> None:
        signal = Signal()
        harness, registry = _setup(signal)
        shared = fixture()
        async with ScriptedCore(shared.device_id, shared.credential, VERSION, signal) as core:
            daemon = Daemon(core.core_url, shared.device_id, shared.credential, registry, "t")
            task = asyncio.create_task(daemon.run())
            peer = await core.next_peer()
            await peer.first_heartbeat()
            await _prepared(peer, shared.agent_kind)
            assert await daemon.stop(cleanup_deadline=1.2) is False
            assert harness.close_attempts >= 2 and harness.owned == 1
            harness.release_everything()
            await asyncio.wait_for(task, WAIT)

    asyncio.run(main())
