"""The Core side of a shared wire scenario that runs no turn: replayed against the real
Core gateway (Starlette + uvicorn on a loopback port, device credentials in SQLite) with
a scripted Runtime peer over a real WebSocket. These scenarios exercise frames a correct
orchestrator never sends on its own (replays, stale handles, transfers, reads), so
the test drives the gateway's own API the way the orchestrator does (subscribe, then
send; register a receipt waiter, then send) and asserts what Core sends (each frame as
the peer receives it) and what it owns: which subscriber each Runtime frame reaches, that
stale or duplicate revisions reach none, that no receipt resolves before the Runtime
sent it, that a lost connection ends observation with an error and never a fabricated
`error` or `done`, that a new connection inherits nothing. It never imports the
Runtime's implementation (only `runtime.proto`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from websockets.exceptions import InvalidStatus

from allinone.core.gateway.connection import Connection
from allinone.core.gateway.subscriptions import PreparationSubscription, RunSubscription
from runtime.proto.codec import CORE_TO_RUNTIME, RUN_EVENT_TYPES
from runtime.proto.interactions import InteractionDecisionAck
from runtime.proto.scenarios import (
    Bindings,
    CoreExpect,
    CoreFrame,
    Dial,
    Disconnect,
    Expect,
    Mismatch,
    Reconnect,
    RuntimeFrame,
    Scenario,
    Silence,
    Step,
    dial_versions,
    fixture,
    wire_text,
)
from runtime.proto.steering import PromptSteerAck
from tests.contract.core_app import CoreApp
from tests.contract.core_gateway import WAIT_SECONDS, GatewayHost
from tests.contract.scripted_runtime import RuntimePeer, ScriptedRuntime

RUN_ROUTED = frozenset(
    {*RUN_EVENT_TYPES, "function_call", "permission_request", "prompt_for_user_choice"}
)
RESULT_TYPES = frozenset(
    {
        "runtime_prepare_result",
        "workspace_read_result",
        "workspace_write_result",
        "workspace_export_result",
    }
)

OPERATIONS = frozenset({"runtime_prepare", "workspace_read", "workspace_write", "workspace_export"})


def _json(payload: msgspec.Struct) -> Any:
    """A payload as decoded JSON, exactly as it would travel."""
    return json.loads(msgspec.json.encode(payload))


class CoreSide:
    """Plays the scripted Runtime's part of one scenario against the real gateway."""

    host: GatewayHost | CoreApp

    def __init__(self, scenario: Scenario, tmp_path: Path) -> None:
        self.scenario = scenario
        self.fixture = fixture()
        self.kind = self.fixture.agent_kind  # the agent kind the scripted Runtime declares
        self.kinds: list[Any] | None = None  # a later declaration replacing the fixture's
        self.bindings = Bindings(self.fixture.synthetic)
        self.tmp_path = tmp_path
        self.peer: RuntimePeer | None = None
        self.connection: Connection | None = None
        self.heartbeat_ts = 1000
        self._reset()

    def _reset(self) -> None:
        self.preparations: dict[str, PreparationSubscription] = {}
        self.runs: dict[str, RunSubscription] = {}
        self.acks: dict[str, asyncio.Future[InteractionDecisionAck]] = {}
        self.steers: dict[str, asyncio.Queue[PromptSteerAck]] = {}
        self.stages: dict[str, str] = {}
        self.results: dict[str, asyncio.Queue[Any]] = {}

    def core(self) -> GatewayHost | CoreApp:
        return GatewayHost(self.tmp_path / "core", self.fixture.device_id, self.fixture.credential)

    async def run(self) -> None:
        async with self.core() as host:
            self.host = host
            self.runtime = ScriptedRuntime(
                host.base_url, self.fixture.device_id, self.fixture.credential
            )
            try:
                if self.scenario.connected:
                    await self.connect()
                for index, step in enumerate(self.scenario.steps):
                    try:
                        await self.step(step)
                    except AssertionError as exc:
                        raise AssertionError(f"step {index} {step!r}: {exc}") from exc
                await self.finish()
            finally:
                if self.peer is not None:
                    await self.peer.close()

    async def finish(self) -> None:
        """After the last step: nothing more to check on the gateway alone."""

    # Connection.
    def heartbeat(self) -> str:
        """The scripted Runtime's next heartbeat, declaring what it declared last."""
        self.heartbeat_ts += 1
        kind = {
            "kind": self.kind,
            "available": True,
            "capabilities": self.fixture.capabilities,
            "version": "1",
        }
        kinds = [kind] if self.kinds is None else self.kinds
        payload = {
            "ts": self.heartbeat_ts,
            "active_requests": 0,
            "home_removal": False,
            "supported_agent_kinds": kinds,
        }
        return json.dumps({"type": "heartbeat", "payload": payload})

    async def connect(self) -> None:
        previous = self.connection
        self.peer = await self.runtime.connect()
        await self.peer.send(self.heartbeat())
        ts = self.heartbeat_ts

        def declared() -> bool:
            current = self.host.connection()
            return current is not None and current.last_heartbeat_ts == ts

        assert await self.host.until(declared), "Core did not register the heartbeat"
        connection = self.host.connection()
        assert connection is not None and connection is not previous
        for run_id in self.runs:  # a new connection inherits no Run route
            assert connection.run_subscription(run_id) is None, run_id
        self.connection = connection
        self._reset()

    async def barrier(self) -> None:
        """Wait until Core processed every frame sent so far (a heartbeat round trip)."""
        connection, peer = self.connection, self.peer
        if connection is None or peer is None or peer.closed.is_set():
            return
        if connection.closed.is_set():
            return
        await peer.send(self.heartbeat())
        ts = self.heartbeat_ts
        assert await self.host.until(
            lambda: connection.last_heartbeat_ts == ts or connection.closed.is_set()
        ), "Core did not process the barrier heartbeat"

    # Steps.
    async def step(self, step: Step) -> None:
        if isinstance(step, CoreFrame):
            await self.core_sends(step)
        elif isinstance(step, RuntimeFrame):
            await self.runtime_sends(step)
        elif isinstance(step, Silence):
            assert self.peer is not None
            await self.peer.expect_silence()
        elif isinstance(step, Disconnect):
            await self.disconnect(step)
        elif isinstance(step, Reconnect):
            await self.connect()
        elif isinstance(step, Dial):
            await self.dial(step)
        elif isinstance(step, Expect) and step.core is not None:
            await self.expect(step.core)
        # native, settle and clock steps happen inside the Runtime: Core sees nothing.

    async def core_sends(self, step: CoreFrame) -> None:
        if step.raw:
            return  # Core's gateway only sends typed envelopes; a scripted Core sends these
        connection, peer = self.connection, self.peer
        assert connection is not None and peer is not None
        payload = msgspec.json.decode(
            json.dumps(self.bindings.substitute(step.payload)), type=CORE_TO_RUNTIME[step.type]
        )
        self.subscribe(connection, step, payload)
        await connection.send(step.type, step.id, payload)
        self.bindings.match_frame(step, await peer.next_frame())

    def subscribe(self, connection: Connection, step: CoreFrame, payload: Any) -> None:
        """What the orchestrator registers before it sends (subscribe before sending)."""
        if step.type == "execution_prepare" and step.id not in self.preparations:
            self.preparations[step.id] = connection.subscribe_preparation(step.id)
        elif step.type == "execution_start" and payload.run_id not in self.runs:
            self.runs[payload.run_id] = connection.subscribe_run(payload.run_id)
        elif step.type == "prompt_steer" and payload.input_id not in self.steers:
            self.steers[payload.input_id] = connection.expect_steer(step.id, payload.input_id)
        elif step.type in OPERATIONS and step.id not in self.results:
            self.results[step.id] = connection.expect_results(step.id)
        delivery = getattr(payload, "delivery_id", "")
        if delivery:
            self.acks[delivery] = connection.expect_ack(delivery)

    async def runtime_sends(self, step: RuntimeFrame) -> None:
        peer = self.peer
        assert peer is not None
        if step.withheld:
            return  # a Runtime that stops answering: Core never receives it
        expected = self.bindings.substitute(step.payload)
        if step.type == "interaction_decision_ack" and not step.injected:
            waiter = self.acks[expected["delivery_id"]]
            assert not waiter.done(), "a receipt resolved before the Runtime sent it"
        await peer.send(wire_text(step, self.bindings))
        if step.raw or step.injected:
            return  # a fault: what Core owns afterwards is checked by the next steps
        if not step.core_delivers:
            await self.barrier()
            assert step.type == "preparation_status"
            sub = self.preparations.get(step.id)  # none when Core never asked
            leaked = [] if sub is None else sub.drain_nowait()
            assert not leaked, f"Core delivered a stale or duplicate status: {leaked}"
            return
        delivered = await self.delivered(step, expected)
        if delivered != expected:
            raise Mismatch(f"Core delivered {delivered}, the Runtime sent {expected}")

    async def delivered(self, step: RuntimeFrame, expected: dict[str, Any]) -> Any:
        """The payload Core handed to the subscriber that owns `step`'s frame."""
        if step.type == "preparation_status":
            return _json(await self._next(self.preparations[step.id]))
        if step.type in RUN_ROUTED:
            sub = self.runs[step.id]
            frame = await self._next(sub)
            assert (frame.type, frame.id) == (step.type, step.id), frame
            if step.type == "done":
                assert await sub.next(WAIT_SECONDS) is None and sub.error is None
            return _json(frame.payload)
        if step.type == "interaction_decision_ack":
            ack = await asyncio.wait_for(self.acks[expected["delivery_id"]], WAIT_SECONDS)
            sub = self.runs.get(step.id)
            if sub is not None and not sub.closed:  # a Run's receipt is also in its stream
                frame = await self._next(sub)
                assert frame.type == step.type and _json(frame.payload) == _json(ack)
            return _json(ack)
        if step.type == "prompt_steer_ack":
            steer = await asyncio.wait_for(self.steers[expected["input_id"]].get(), WAIT_SECONDS)
            self.stages[steer.input_id] = steer.check(steer.input_id).value
            return _json(steer)
        if step.type in RESULT_TYPES:
            frame = await asyncio.wait_for(self.results[step.id].get(), WAIT_SECONDS)
            assert (frame.type, frame.id) == (step.type, step.id), frame
            return _json(frame.payload)
        raise AssertionError(f"no Core route is defined for {step.type}")

    async def _next(self, sub: PreparationSubscription | RunSubscription) -> Any:
        try:
            item = await sub.next(WAIT_SECONDS)
        except TimeoutError:
            raise AssertionError("Core delivered nothing to the subscriber") from None
        assert item is not None, f"the subscription closed ({sub.error})"
        return item

    async def disconnect(self, step: Disconnect) -> None:
        peer, connection = self.peer, self.connection
        assert peer is not None and connection is not None
        if step.by == "lost":
            peer.abort()
        else:  # Core closes: the scripted Runtime only observes it
            await peer.wait_closed()
            assert peer.close_code == step.code, peer.close_code
        assert await self.host.until(lambda: self.host.connection() is None)
        assert connection.closed.is_set()

    async def dial(self, step: Dial) -> None:
        info = await self.runtime.bootstrap()
        for version in dial_versions(step):
            with pytest.raises(InvalidStatus) as refused:
                await self.runtime.dial(info["ws_url"], version)
            response = refused.value.response
            assert response.status_code == step.status, version
            assert json.loads(response.body)["error"] == step.error, version
            assert not list(self.host.registry), "a refused Runtime was registered"

    async def expect(self, want: CoreExpect) -> None:
        await self.barrier()
        connection = self.host.connection()
        if want.connected is not None:
            assert (connection is not None) == want.connected, connection
        if want.declared is not None:
            assert connection is not None and (connection.kinds is not None) == want.declared
        for run_id, reason in (want.runs_closed or {}).items():
            sub = self.runs[run_id]
            item = await sub.next(WAIT_SECONDS)
            assert item is None, f"{run_id}: Core delivered {item} after the connection ended"
            assert sub.error is not None and sub.error.reason == reason, sub.error
        for input_id, stage in (want.steer_stage or {}).items():
            assert self.stages.get(input_id) == stage, self.stages
            assert self.steers[input_id].empty(), "a receipt is waiting unread"
