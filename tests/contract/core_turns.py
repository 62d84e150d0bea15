"""The Core side of a shared wire scenario that runs a turn: the real Core (`App` with
admission, orchestrator, gateway and projector on a SQLite file) and a scripted Runtime
peer over a real loopback WebSocket.

The test never sends a Core frame itself. It admits a turn through the public API (the
official SDK creates a session with the turn's input), cancels it or steers it through
the public API when the scenario's next Core frame is `prompt_cancel` or `prompt_steer`,
answers a permission request or a user choice through the public API, and requires each
frame Core's orchestrator then sends to be the scenario's, with the ids Core generates
bound to the scenario's literals at first sight. A `replay` frame (one a correct Core
never sends itself) goes out through Core's own connection while the orchestrator runs
the turn, so the Runtime's answer to it reaches the real orchestrator. The Runtime frames
go back with those ids. After the last step the turn's public outcome (status,
`x_corebox.error_code`, the session's items) must be the scenario's, the session must be
idle again after the turn's terminal event, and Core must send nothing more. It never imports
the Runtime's implementation (only `runtime.proto`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import msgspec
from openai import AsyncOpenAI

from allinone.core.orchestration.timers import Timers
from runtime.proto.codec import CORE_TO_RUNTIME
from runtime.proto.scenarios import (
    Client,
    CoreExpect,
    CoreFrame,
    CoreTurn,
    Mismatch,
    RuntimeFrame,
    Step,
    is_placeholder,
    wire_text,
)
from tests.conftest import API_KEY
from tests.contract.core_app import CoreApp
from tests.contract.core_gateway import WAIT_SECONDS
from tests.contract.core_side import CoreSide

# The harness a public agent with a plain model selects: the fixture's agent kind
# stands for it, since Core only runs the harnesses it knows.
CORE_HARNESS = "scripted"
# Payload fields whose scenario literals stand for values Core generates.
ALIASED = frozenset({"session_id", "run_id", "delivery_id", "input_id", "agent_kind"})
SDK_TIMEOUT_SECONDS = 20.0
TERMINAL_TURN_EVENTS = frozenset(
    {"agent.session.turn.completed", "agent.session.turn.failed", "agent.session.turn.cancelled"}
)
SETTLED_SESSION_EVENTS = frozenset({"agent.session.idle", "agent.session.failed"})


class Aliases:
    """Scenario literals bound to the values the real Core generated for them."""

    def __init__(self, preset: Mapping[str, str]) -> None:
        self.values: dict[str, str] = dict(preset)

    def learn(self, expected: CoreFrame, actual: Mapping[str, Any]) -> None:
        """Bind each literal id of `expected` to the value at the same place in `actual`."""
        self._bind(expected.id, actual.get("id"))
        self._walk(expected.payload, actual.get("payload") or {})

    def _walk(self, expected: Any, actual: Any) -> None:
        if isinstance(expected, dict) and isinstance(actual, dict):
            for key, value in expected.items():
                if key in ALIASED and not is_placeholder(value):
                    self._bind(value, actual.get(key))
                elif key in actual:
                    self._walk(value, actual[key])
        elif isinstance(expected, list) and isinstance(actual, list):
            for want, got in zip(expected, actual, strict=False):
                self._walk(want, got)

    def _bind(self, literal: Any, actual: Any) -> None:
        if not isinstance(literal, str) or not literal or literal in self.values:
            return
        if not isinstance(actual, str) or not actual:
            return  # the mismatch is reported by matching
        if actual in self.values.values():
            raise Mismatch(f"{actual!r} already stands for another literal than {literal!r}")
        self.values[literal] = actual

    def _map(self, value: Any, table: Mapping[str, str], key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self._map(v, table, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._map(v, table, key) for v in value]
        if key in ALIASED and isinstance(value, str):
            return table.get(value, value)
        return value

    def to_scenario(self, frame: Mapping[str, Any]) -> dict[str, Any]:
        """A frame Core sent, with Core's generated values replaced by their literals."""
        reverse = {actual: literal for literal, actual in self.values.items()}
        return {
            "type": frame.get("type", ""),
            "id": reverse.get(frame.get("id", ""), frame.get("id", "")),
            "payload": self._map(frame.get("payload") or {}, reverse),
        }

    def to_core(self, text: str) -> str:
        """A Runtime frame's text with the scenario's literals replaced by Core's values."""
        envelope = json.loads(text)
        if "id" in envelope:
            envelope["id"] = self.values.get(envelope["id"], envelope["id"])
        if "payload" in envelope:
            envelope["payload"] = self._map(envelope["payload"], self.values)
        return json.dumps(envelope)


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def item_line(item: Any) -> str:
    """A public item as `role: text` (a message), `function_call: name arguments`,
    `function_call_output: output`, or its type (anything else)."""
    if item.type == "message":
        text = "".join(getattr(part, "text", "") for part in item.content)
        return f"{item.role}: {text}"
    if item.type == "function_call":
        return f"function_call: {item.name} {item.arguments}"
    if item.type == "function_call_output":
        return f"function_call_output: {item.output}"
    return str(item.type)


class CoreTurnSide(CoreSide):
    """Plays the scripted Runtime's part of a turn scenario against the real Core."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind = CORE_HARNESS
        turn = self.scenario.turn
        assert turn is not None
        self.turn: CoreTurn = turn
        self.timers = Timers(**self.turn.timers)
        self.aliases = Aliases({self.fixture.agent_kind: CORE_HARNESS})
        self.events: asyncio.Task[list[Any]] | None = None
        self.seen: list[Any] = []  # the admitted session's events so far
        self.seen_changed = asyncio.Event()
        self.answered = 0  # required actions answered through the public API so far

    def core(self) -> CoreApp:
        return CoreApp(
            self.tmp_path / "core", self.fixture.device_id, self.fixture.credential, self.timers
        )

    def client(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=f"{self.host.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            timeout=SDK_TIMEOUT_SECONDS,
            _strict_response_validation=True,
        )

    async def admit(self) -> list[Any]:
        """Create the session with the turn's input; its events until the session settles
        after the turn ended."""
        seen = self.seen
        async with self.client() as client:
            stream = await client.beta.agents.sessions.create(
                agent={"model": "fixture-model", **self.turn.agent},  # type: ignore[typeddict-item]
                environment={"type": "none"},
                input=self.turn.input,
                stream=True,
            )
            async with stream:
                async for event in stream:
                    seen.append(event)
                    self.seen_changed.set()
                    ended = any(e.type in TERMINAL_TURN_EVENTS for e in seen)
                    if ended and event.type in SETTLED_SESSION_EVENTS:
                        break
        return seen

    async def public_event(self, event: dict[str, Any]) -> None:
        async with self.client() as client:
            await client.beta.agents.sessions.events.create(
                self.aliases.values["session"],
                events=[event],  # type: ignore[list-item]
            )

    async def step(self, step: Step) -> None:
        if isinstance(step, Client):
            await self.public_event({"type": "agent.session.input.cancel"})
            return
        await super().step(step)

    async def required_action(self) -> Any:
        """The session as Core announced its next unanswered required action."""
        while True:
            self.seen_changed.clear()
            announced = [e for e in self.seen if e.type == "agent.session.requires_action"]
            if len(announced) > self.answered:
                self.answered += 1
                return announced[self.answered - 1].session
            try:
                await asyncio.wait_for(self.seen_changed.wait(), WAIT_SECONDS)
            except TimeoutError:
                raise AssertionError("Core announced no required action") from None

    async def decide(self, step: CoreFrame) -> None:
        """Answer the pending permission request or user choice through the public API."""
        session = await self.required_action()
        if step.type == "permission_decision":
            [action] = session.required_actions
            decision = "approve" if step.payload["approved"] else "deny"
            await self.public_event(
                {
                    "type": "agent.session.input.mcp_approval_request_result",
                    "request_id": action.request_id,
                    "response": {"type": "mcp_tool_call", "decision": decision},
                }
            )
            return
        [prompt] = session.x_corebox["required_actions"]
        await self.public_event(
            {
                "type": "x_corebox.input.user_choice",
                "ask_id": prompt["ask_id"],
                "question_answers": step.payload.get("question_answers", []),
                "cancelled": step.payload.get("cancelled", False),
            }
        )

    async def answer_call(self, step: CoreFrame) -> None:
        """Submit the pending function call's output through the public API."""
        await self.required_action()
        text = "".join(part["text"] for part in step.payload["content"])
        await self.public_event(
            {
                "type": "agent.session.input.tool_result",
                "turn_id": self.aliases.values["run"],
                "call_id": step.payload["call_id"],
                "success": step.payload["success"],
                "output": text,
            }
        )

    async def replay(self, step: CoreFrame) -> None:
        """Send a frame the orchestrator never sends itself through Core's connection."""
        connection = self.connection
        assert connection is not None
        envelope = json.loads(self.aliases.to_core(wire_text(step, self.bindings)))
        payload = msgspec.convert(envelope["payload"], CORE_TO_RUNTIME[step.type])
        await connection.send(step.type, envelope.get("id", ""), payload)

    async def core_sends(self, step: CoreFrame) -> None:
        if step.raw:
            return  # Core's gateway only sends typed envelopes
        peer = self.peer
        assert peer is not None
        if step.replay:
            await self.replay(step)
        elif step.type == "execution_prepare" and self.events is None:
            self.events = asyncio.create_task(self.admit(), name="admitted-turn")
        elif step.type == "prompt_cancel" and step.payload.get("delivery_id"):
            await self.public_event({"type": "agent.session.input.cancel"})
        elif step.type == "prompt_steer":
            text = step.payload["input"][0]["content"][0]["text"]
            await self.public_event(message(text))
        elif step.type in ("permission_decision", "prompt_for_user_choice_decision"):
            await self.decide(step)
        elif step.type == "function_result":
            await self.answer_call(step)
        elif step.type not in ("execution_start", "execution_release", "prompt_cancel"):
            raise AssertionError(f"no public action makes Core send {step.type}")
        try:
            frame = await peer.next_frame()
        except AssertionError:
            self.admission_failure()
            raise
        if not step.replay:  # a replay's literals are the test's own, not Core's
            self.aliases.learn(step, frame)
        self.bindings.match_frame(step, self.aliases.to_scenario(frame))

    def admission_failure(self) -> None:
        """Raise why the admitted session's stream ended early, if it did."""
        events = self.events
        if events is not None and events.done() and not events.cancelled():
            failure = events.exception()
            if failure is not None:
                raise AssertionError(f"the public API refused the turn: {failure!r}") from failure

    async def runtime_sends(self, step: RuntimeFrame) -> None:
        peer = self.peer
        assert peer is not None
        if step.withheld:
            return  # a Runtime that stops answering: Core never receives it
        if step.type == "heartbeat":  # a new declaration, kept by later heartbeats
            self.kinds = [
                {**kind, "kind": self.aliases.values.get(kind["kind"], kind["kind"])}
                for kind in step.payload["supported_agent_kinds"]
            ]
            await self.barrier()
            return
        text = wire_text(step, self.bindings)
        await peer.send(text if step.raw else self.aliases.to_core(text))
        await self.barrier()

    async def expect(self, want: CoreExpect) -> None:
        # Run routes and steering receipts belong to the orchestrator here: the turn's
        # public outcome after the last step stands for them.
        await super().expect(msgspec.structs.replace(want, runs_closed=None, steer_stage=None))

    async def finish(self) -> None:
        assert self.events is not None, "the scenario admitted no turn"
        budget = WAIT_SECONDS + sum(self.turn.timers.values())
        try:
            events = await asyncio.wait_for(self.events, budget)
        except TimeoutError:
            raise AssertionError(f"the turn did not end within {budget:.1f}s") from None
        session_id = self.aliases.values["session"]
        async with self.client() as client:
            turns = (await client.beta.agents.sessions.turns.list(session_id)).data
            items = (await client.beta.agents.sessions.items.list(session_id, order="asc")).data
        [turn] = turns
        assert turn.id == self.aliases.values.get("run", turn.id), (turn.id, self.aliases.values)
        x_corebox = getattr(turn, "x_corebox", None) or {}
        outcome = (turn.status, x_corebox.get("error_code"))
        assert outcome == (self.turn.status, self.turn.error_code), (outcome, events[-1].type)
        # Every root turn ends with its terminal event, then the session is idle again.
        types = [e.type for e in events]
        assert types[-2:] == [f"agent.session.turn.{self.turn.status}", "agent.session.idle"], types
        if self.turn.items is not None:
            assert [item_line(i) for i in items] == self.turn.items, items
        if self.peer is not None and not self.peer.closed.is_set():
            await self.peer.expect_silence()  # Core sent no frame the scenario does not list
