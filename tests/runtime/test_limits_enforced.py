"""The Runtime enforces the limits of `runtime.proto.limits` where the seed puts them,
on the real Dispatcher (frames in, frames out), with its timers shortened through
`runtime.timers.Timers` and blocking reads held by an injected offload."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from runtime.dispatcher import Dispatcher
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto import execution as wire
from runtime.proto import limits
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.codec import Frame
from runtime.proto.errors import ValidationError
from runtime.proto.exports import WorkspaceExport
from runtime.proto.scenarios import Adapter, fixture
from runtime.proto.suspension import EnvironmentQuiesce, EnvironmentResume
from runtime.proto.workspace import WorkspaceRead
from runtime.suspension import Suspensions
from runtime.timers import Timers
from runtime.workspaces import Workspaces
from tests.contract.controlled import ControlledHarness, Signal

WAIT = 5.0


class Peer:
    """Collects what the Dispatcher sends, in order."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()

    async def send(self, type_: str, id_: str, payload: msgspec.Struct | None) -> None:
        await self.sent.put((type_, id_, payload))

    async def next(self) -> tuple[str, str, Any]:
        return await asyncio.wait_for(self.sent.get(), WAIT)


def configuration(
    kind: str = "scripted", environment: str = "", read_only: bool = False, **options: Any
) -> wire.ExecutionConfiguration:
    local = wire.LocalEnvironment(id=environment, type="openai_hosted") if environment else None
    return wire.ExecutionConfiguration(
        agent_kind=kind,
        agent_options=wire.AgentOptions(model="m", **options),
        execution_controls=wire.ExecutionControls(
            web_search="disabled", text_verbosity="medium", disable_programmatic_tool_calling=True
        ),
        disable_execution_environment=local is None,
        local_environment=local,
        workspace_read_only=read_only,
    )


def prepare(request_id: str, session: str, cfg: wire.ExecutionConfiguration) -> Frame:
    return Frame("execution_prepare", request_id, wire.ExecutionPrepare(session, cfg), "")


async def prepared(dispatcher: Dispatcher, peer: Peer, frame: Frame) -> wire.PreparationStatus:
    """Send a prepare and return its last status (`ready`, or the rejection)."""
    await dispatcher.handle(frame)
    while True:
        type_, id_, status = await peer.next()
        assert (type_, id_) == ("preparation_status", frame.id)
        if status.state is not wire.PreparationState.PREPARING:
            return status  # type: ignore[no-any-return]


def scripted() -> HarnessRegistry:
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    return harnesses


def test_a_harness_config_over_its_limit_is_an_invalid_configuration() -> None:
    fits = {"x": "a" * (limits.MAX_HARNESS_CONFIG_BYTES - 16)}
    wire.ExecutionPrepare("s", configuration(harness_config=fits)).validate()
    over = {"x": "a" * limits.MAX_HARNESS_CONFIG_BYTES}
    with pytest.raises(ValidationError) as raised:
        wire.ExecutionPrepare("s", configuration(harness_config=over)).validate()
    assert raised.value.code == "invalid_configuration"


def test_at_most_two_environments_are_quiesced_at_once() -> None:
    suspensions = Suspensions()
    envs = [str(uuid.uuid4()) for _ in range(3)]

    def quiesce(env: str) -> str:
        reply = suspensions.quiesce(EnvironmentQuiesce(env, f"s-{env}"), lambda _e: False)
        return reply.error_code or "accepted"

    assert limits.MAX_OUTSTANDING_SUSPENSIONS == 2
    assert [quiesce(e) for e in envs] == ["accepted", "accepted", "resource_busy"]
    assert suspensions.resume(EnvironmentResume(envs[0], f"s-{envs[0]}")).accepted
    assert quiesce(envs[2]) == "accepted"


def test_executors_are_capped_and_an_idle_one_makes_room() -> None:
    async def main() -> None:
        peer = Peer()
        dispatcher = Dispatcher(scripted(), peer.send)
        cfg = configuration()
        handles = []
        for n in range(limits.MAX_EXECUTORS):
            status = await prepared(dispatcher, peer, prepare(f"p{n}", f"s{n}", cfg))
            assert status.state is wire.PreparationState.READY, status
            handles.append(status.handle)
        refused = await prepared(dispatcher, peer, prepare("over", "s-over", cfg))
        # A capacity refusal Core retries (seed 000: only `preparation_capacity` leaves
        # the turn queued; any other code fails it).
        assert (refused.state, refused.error_code) == ("rejected", "preparation_capacity")
        # Releasing an admission leaves its Executor idle: the next prepare closes it.
        await dispatcher.handle(
            Frame("execution_release", "p0", wire.ExecutionRelease(handles[0]), "")
        )
        assert (await peer.next())[2].state is wire.PreparationState.RELEASED
        status = await prepared(dispatcher, peer, prepare("again", "s-over", cfg))
        assert status.state is wire.PreparationState.READY and not status.reused
        assert await dispatcher.close()

    asyncio.run(main())


def test_an_idle_executor_is_closed_after_the_idle_timer() -> None:
    async def main() -> None:
        setup = fixture()
        signal = Signal()
        declaration = msgspec.convert(setup.capabilities, AgentKindCapabilities)
        harness = ControlledHarness(setup.agent_kind, declaration, Adapter(), signal)
        harnesses = HarnessRegistry()
        harnesses.register(harness)
        peer = Peer()
        dispatcher = Dispatcher(harnesses, peer.send, timers=Timers(executor_idle=0.05))
        cfg = configuration(kind=setup.agent_kind)
        ready = await prepared(dispatcher, peer, prepare("p", "s", cfg))
        await dispatcher.handle(
            Frame("execution_release", "p", wire.ExecutionRelease(ready.handle), "")
        )
        assert (await peer.next())[2].state is wire.PreparationState.RELEASED
        assert await signal.until(lambda: harness.closes == 1), harness.snapshot()
        again = await prepared(dispatcher, peer, prepare("p2", "s", cfg))
        assert again.state is wire.PreparationState.READY and not again.reused
        assert again.executor_id != ready.executor_id and harness.created == 2
        assert await dispatcher.close()

    asyncio.run(main())


class HeldReads:
    """An offload that holds every blocking read until `release()`."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.tasks: list[asyncio.Task[Any]] = []

    async def __call__(self, work: Callable[[], Any]) -> Any:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.append(task)
        await self.gate.wait()
        return work()

    async def release(self) -> None:
        """Let every held read end; returns once they ended (and left the capacity)."""
        self.gate.set()
        await asyncio.wait(self.tasks)


def test_reads_are_capped_and_bounded_by_their_timer(tmp_path: Path) -> None:
    async def main() -> None:
        environment = str(uuid.uuid4())
        peer = Peer()
        held = HeldReads()
        dispatcher = Dispatcher(
            scripted(),
            peer.send,
            workspaces=Workspaces(tmp_path),
            timers=Timers(workspace_read=0.05),
            offload=held,
        )
        cfg = configuration(environment=environment, read_only=True)
        ready = await prepared(dispatcher, peer, prepare("read", "s", cfg))
        (tmp_path / environment / "notes.txt").write_text("hello", encoding="utf-8")

        async def read(n: int) -> Any:
            request = WorkspaceRead(environment, "notes.txt", handle=ready.handle, max_bytes=64)
            await dispatcher.handle(Frame("workspace_read", f"r{n}", request, ""))
            type_, id_, result = await peer.next()
            assert (type_, id_) == ("workspace_read_result", f"r{n}")
            return result

        results = await asyncio.gather(*(read(n) for n in range(limits.MAX_CONCURRENT_READS)))
        # Held past the timer: unknown, never data.
        assert {(r.outcome, r.error_code, r.data) for r in results} == {
            ("unknown", "read_unconfirmed", b"")
        }
        # The reads still run natively: they keep the capacity.
        over = await read(limits.MAX_CONCURRENT_READS)
        assert (over.outcome, over.error_code) == ("rejected", "read_capacity")
        await held.release()
        done = await read(limits.MAX_CONCURRENT_READS + 1)
        assert (done.outcome, done.data) == ("completed", b"hello")
        assert await dispatcher.close()

    asyncio.run(main())


def test_an_export_is_dropped_at_its_deadline(tmp_path: Path) -> None:
    async def main() -> None:
        environment = str(uuid.uuid4())
        peer = Peer()
        dispatcher = Dispatcher(
            scripted(),
            peer.send,
            workspaces=Workspaces(tmp_path),
            timers=Timers(export_deadline=0.05),
        )
        cfg = configuration(environment=environment, read_only=True)
        ready = await prepared(dispatcher, peer, prepare("read", "s", cfg))
        outputs = tmp_path / environment / "outputs"
        outputs.mkdir()
        (outputs / "big.bin").write_bytes(b"x" * (3 * limits.MAX_EXPORT_CHUNK_BYTES))
        begin = WorkspaceExport("begin", handle=ready.handle, environment_id=environment)
        await dispatcher.handle(Frame("workspace_export", "export", begin, ""))
        first = (await peer.next())[2]
        assert first.outcome == "chunk"
        # The loop runs timers in deadline order: once this later one fires, the
        # export's deadline has passed.
        passed = asyncio.Event()
        asyncio.get_running_loop().call_later(0.1, passed.set)
        await passed.wait()
        pull = WorkspaceExport("next", offset=len(first.data))
        await dispatcher.handle(Frame("workspace_export", "export", pull, ""))
        refused = (await peer.next())[2]
        assert (refused.outcome, refused.error_code) == ("rejected", "invalid_request")
        assert await dispatcher.close()

    asyncio.run(main())
