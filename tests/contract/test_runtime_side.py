"""Tier 2, Runtime side: every shared wire scenario replayed against the real Runtime
transport, daemon and dispatcher (`runtime.daemon.Daemon` with the controlled adapter in
a HarnessRegistry), through a scripted Core, over real loopback sockets.

It asserts what the Runtime sends (each frame, with Runtime-generated values bound to
placeholders) and what it owns (the controlled adapter's native observations, its
connections, its workspace). It never imports Core (`allinone`).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import msgspec
import pytest

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.proto.capabilities import AgentKindCapabilities, SupportedAgentKind
from runtime.proto.scenarios import (
    Bindings,
    Clock,
    CoreFrame,
    Dial,
    Disconnect,
    Expect,
    Mismatch,
    Native,
    Reconnect,
    RuntimeExpect,
    RuntimeFrame,
    Scenario,
    Settle,
    Silence,
    Step,
    dial_versions,
    fixture,
    load,
    names,
    wire_text,
)
from runtime.proto.version import VERSION
from runtime.transport import PermanentError
from runtime.workspaces import Workspaces
from tests.contract.controlled import ControlledHarness, Signal
from tests.contract.scripted_core import CorePeer, ScriptedCore

START_MS = 1_700_000_000_000
STOP_SECONDS = 15.0

# Scenario name -> reason, only for Runtime behaviour that does not exist yet.
NOT_IMPLEMENTED: dict[str, str] = {}


def _cases() -> list[object]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=NOT_IMPLEMENTED[name])]
            if name in NOT_IMPLEMENTED
            else [],
        )
        for name in names()
    ]


class RuntimeSide:
    """Plays the scripted Core's part of one scenario against the real Runtime."""

    def __init__(self, scenario: Scenario, tmp_path: Path) -> None:
        self.scenario = scenario
        self.fixture = fixture()
        self.signal = Signal()
        self.declaration = msgspec.convert(self.fixture.capabilities, AgentKindCapabilities)
        self.harness = ControlledHarness(
            self.fixture.agent_kind, self.declaration, scenario.adapter, self.signal
        )
        self.now_ms = START_MS
        self.bindings = Bindings()
        self.workspaces = tmp_path / "workspaces"
        self.environment = self.workspaces / self.fixture.environment_id
        self.environment.mkdir(parents=True)
        for name, content in scenario.workspace.items():
            (self.environment / name).write_text(content, encoding="utf-8")
        self.peer: CorePeer | None = None

    def daemon(self, core: ScriptedCore) -> Daemon:
        registry = HarnessRegistry()
        registry.register(self.harness)
        return Daemon(
            core.core_url,
            self.fixture.device_id,
            self.fixture.credential,
            registry,
            "contract-test",
            sleep=self.harness.retry_sleep,
            workspaces=Workspaces(self.workspaces),
            now_ms=lambda: self.now_ms,
        )

    async def run(self) -> None:
        async with ScriptedCore(
            self.fixture.device_id, self.fixture.credential, VERSION, self.signal
        ) as core:
            self.core = core
            daemon = self.daemon(core) if self.scenario.connected else None
            task = asyncio.create_task(daemon.run()) if daemon is not None else None
            try:
                if task is not None:
                    await self.connect()
                for index, step in enumerate(self.scenario.steps):
                    try:
                        await self.step(step)
                    except AssertionError as exc:
                        raise AssertionError(f"step {index} {step!r}: {exc}") from exc
                assert not core.all_violations(), core.all_violations()
                if task is not None and task.done():
                    task.result()  # the daemon must not have stopped on its own
            finally:
                self.harness.release_everything()
                if daemon is not None and task is not None:
                    await asyncio.wait_for(daemon.stop(), STOP_SECONDS)
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(task, STOP_SECONDS)

    async def connect(self) -> None:
        self.peer = await self.core.next_peer()
        beat = await self.peer.first_heartbeat()
        expected = SupportedAgentKind(
            kind=self.fixture.agent_kind,
            available=True,
            capabilities=self.declaration,
            version=self.harness.version,
        )
        assert beat.supported_agent_kinds == [expected], beat
        assert msgspec.to_builtins(beat.supported_agent_kinds[0].capabilities) == (
            self.fixture.capabilities
        )

    async def step(self, step: Step) -> None:
        peer = self.peer
        if isinstance(step, CoreFrame):
            assert peer is not None
            await peer.send(wire_text(step, self.bindings))
        elif isinstance(step, RuntimeFrame):
            if step.raw or step.injected:
                return  # a fault only a scripted Runtime sends
            assert peer is not None
            self.bindings.match_frame(step, await peer.next_frame())
        elif isinstance(step, Native):
            await self.harness.act(step)
        elif isinstance(step, Settle):
            self.harness.settle()
        elif isinstance(step, Clock):
            self.now_ms += step.advance_ms
        elif isinstance(step, Silence):
            assert peer is not None
            await peer.expect_silence()
        elif isinstance(step, Disconnect):
            assert peer is not None
            if step.by == "lost":
                peer.abort()
            else:
                await peer.close(step.code)
            await asyncio.wait_for(peer.closed.wait(), STOP_SECONDS)
        elif isinstance(step, Reconnect):
            await self.connect()
        elif isinstance(step, Dial):
            await self.dial(step)
        elif isinstance(step, Expect) and step.runtime is not None:
            await self.expect(step.runtime)

    async def dial(self, step: Dial) -> None:
        """Against a Core that speaks another version: permanent after one attempt."""
        for version in dial_versions(step):
            async with ScriptedCore(
                self.fixture.device_id, self.fixture.credential, version, Signal()
            ) as core:
                with pytest.raises(PermanentError) as raised:
                    await asyncio.wait_for(self.daemon(core).run(), STOP_SECONDS)
                assert raised.value.status == step.status, version
                assert (core.bootstraps, core.dials, core.accepted) == (1, 1, 0), version
                assert not core.all_violations(), core.all_violations()

    def owned(self) -> dict[str, object]:
        state: dict[str, object] = dict(self.harness.snapshot())
        state["connections"] = self.core.accepted
        state["files"] = {
            str(path.relative_to(self.environment)): path.read_text(encoding="utf-8")
            for path in sorted(self.environment.rglob("*"))
            if path.is_file()
        }
        return state

    async def expect(self, want: RuntimeExpect) -> None:
        wanted = {
            name: value for name, value in msgspec.structs.asdict(want).items() if value is not None
        }

        def actual() -> dict[str, object]:
            state = self.owned()
            return {name: state[name] for name in wanted}

        if not await self.signal.until(lambda: actual() == wanted):
            raise Mismatch(f"the Runtime owns {actual()}, the scenario expects {wanted}")


@pytest.mark.parametrize("name", _cases())
def test_runtime_side(name: str, tmp_path: Path) -> None:
    asyncio.run(RuntimeSide(load(name), tmp_path).run())
