"""Shared wire scenarios, defined once (seed 000, contract verification; DESIGN.md 9).

Every `*.json` file in this package except `fixture.json` is one scenario: the ordered
steps of one exchange between Core and a Runtime. Core's gateway replays them against a
scripted Runtime and the Runtime's transport and dispatcher against a scripted Core;
each side asserts what it sends and what it owns, and neither imports the other. This
module only parses and matches (sans-I/O: no socket, no clock, no await).

Steps (`do`):

    core        a frame Core sends: `type`, `id`, `payload`, or a `raw` text frame that
                only a scripted Core can send (Core's real gateway never emits one);
                `replay: true` marks a frame a correct Core never sends on its own (a
                repeat, a conflicting or invalid decision), see `turn` below
    runtime     a frame the Runtime sends; `core_delivers: false` when Core must hand it
                to no subscriber (a duplicate or stale revision); `raw` or `injected`
                frames are faults only a scripted Runtime sends; a `withheld` frame is
                one the real Runtime sends and a scripted Runtime keeps back (Core never
                receives it: a Runtime that stops answering)
    native      the controlled Harness adapter acts natively (Runtime side only)
    settle      native cancellation may finish (Runtime side only)
    clock       the Runtime's clock moves `advance_ms` forward (Runtime side only)
    silence     nothing but heartbeats crosses the wire for SILENCE_WINDOW_SECONDS
    disconnect  the connection ends: `by: lost` (the transport dies under both ends)
                or `by: core` (Core closes it, with close `code`)
    reconnect   the Runtime connects again: a new connection that inherits nothing
    dial        the Runtime dials with each of `versions` (`{version}` is this build's
                wire version); Core answers HTTP `status` with `error` before dispatch
    expect      what each side owns at this point (`core`, `runtime`)
    include     the steps of a named prefix from `fixture.json`
    client      the API client acts on the scenario's turn (`action: cancel`); only the
                Core side that runs a `turn` acts on it, no frame crosses by itself

A scenario with a `turn` (Core side only; the Runtime side ignores it) runs the real
Core: its Core frames are not sent by the test but by Core's orchestrator, for a turn the
test admits through the public API. `execution_prepare` follows the admission of a new
session with `turn.input` (its agent: model `fixture-model` and the fields of
`turn.agent`), `execution_start` follows `ready` (`execution_release` instead when the
client cancelled the turn before it), `prompt_cancel` with a `delivery_id` follows the
client's cancel event (without one it is Core's own, after a broken contract),
`prompt_steer` the client's message while the turn runs, and a decision or
`function_result` the client's answer to the pending action. The literal ids of those
frames (the preparation's envelope id, `session_id`, `run_id`, `delivery_id`,
`input_id`) and the fixture's agent kind stand for the values Core generates, bound at
first sight. After the last step the turn's public outcome must be `turn.status` with
`x_corebox.error_code` `turn.error_code`, the session idle again after the turn's terminal
event, and the session's items `turn.items` (oldest
first: `"role: text"` for a message, `"function_call: name arguments"`,
`"function_call_output: output"`, otherwise the item's type); `turn.timers` shortens
Core's timers for the scenario (field names of Core's `Timers`), so that its real timers
fire in a test.
A `replay` frame is sent through the real Core's own connection while its orchestrator
runs the turn, so that the Runtime's answer reaches the real orchestrator.

Placeholders are strings `"$name"` standing for values the Runtime generates (executor
id, admission handle, expiry). The side that runs the real Runtime binds each one to the
first non-empty value the Runtime sends and requires later frames to repeat it; Core
frames are rewritten with the bound values before they are sent. The side that runs the
real Core uses the synthetic values of the fixture instead. Matching compares `type`,
`id` and `payload` deep-equal on decoded JSON; `trace` is ignored and a missing payload
equals `{}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any, Literal

import msgspec

from runtime.proto.codec import CORE_TO_RUNTIME, RUNTIME_TO_CORE
from runtime.proto.version import VERSION

SILENCE_WINDOW_SECONDS = 0.08
FIXTURE_FILE = "fixture.json"
_STRICT: dict[str, Any] = {"frozen": True, "forbid_unknown_fields": True}


class ScenarioError(ValueError):
    """A scenario file breaks the format; the message names the scenario and step."""


class Mismatch(AssertionError):
    """A frame differs from the scenario; the message lists the differing paths."""


# Steps.
class CoreFrame(msgspec.Struct, tag="core", tag_field="do", **_STRICT):
    type: str = ""
    id: str = ""
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    raw: str = ""
    replay: bool = False

    @property
    def injected(self) -> bool:
        return bool(self.raw)


class RuntimeFrame(msgspec.Struct, tag="runtime", tag_field="do", **_STRICT):
    type: str = ""
    id: str = ""
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    raw: str = ""
    injected: bool = False
    core_delivers: bool = True
    withheld: bool = False


NativeAction = Literal[
    "finish", "permission", "choice", "function", "take_steered", "complete_setup", "allow_close"
]


class Native(msgspec.Struct, tag="native", tag_field="do", **_STRICT):
    action: NativeAction
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class Settle(msgspec.Struct, tag="settle", tag_field="do", **_STRICT):
    pass


class Clock(msgspec.Struct, tag="clock", tag_field="do", **_STRICT):
    advance_ms: int


class Silence(msgspec.Struct, tag="silence", tag_field="do", **_STRICT):
    pass


class Disconnect(msgspec.Struct, tag="disconnect", tag_field="do", **_STRICT):
    by: Literal["lost", "core"]
    code: int = 1000


class Reconnect(msgspec.Struct, tag="reconnect", tag_field="do", **_STRICT):
    pass


class Dial(msgspec.Struct, tag="dial", tag_field="do", **_STRICT):
    versions: list[str]
    status: int
    error: str


class CoreExpect(msgspec.Struct, **_STRICT):
    """What Core owns: its device registry, snapshots, subscriptions and receipts."""

    connected: bool | None = None  # the device has a registered, open connection
    declared: bool | None = None  # that connection holds a capability snapshot
    runs_closed: dict[str, str] | None = None  # run id -> observation error, no fabricated end
    steer_stage: dict[str, str] | None = None  # input id -> stage its last receipt proves


class RuntimeExpect(msgspec.Struct, **_STRICT):
    """What the Runtime owns, as the controlled adapter and the scripted Core see it."""

    setups: int | None = None  # native preparations attempted
    turns: int | None = None  # native turns started
    inputs: list[str] | None = None  # text of the input each native turn received
    # per native turn, the committed history its start carried (entry types), or null
    histories: list[list[str] | None] | None = None
    cancelled: int | None = None  # native turns asked to cancel
    steered: list[str] | None = None  # steered input text the adapter took
    decisions: dict[str, Any] | None = None  # what the adapter received per interaction
    close_attempts: int | None = None
    closes: int | None = None  # successful native closes
    owned: int | None = None  # Executors created and not yet closed successfully
    connections: int | None = None  # WebSocket connections Core accepted
    files: dict[str, str] | None = None  # every file in the fixture Environment's workspace


class Expect(msgspec.Struct, tag="expect", tag_field="do", **_STRICT):
    core: CoreExpect | None = None
    runtime: RuntimeExpect | None = None


class Include(msgspec.Struct, tag="include", tag_field="do", **_STRICT):
    prefix: str


class Client(msgspec.Struct, tag="client", tag_field="do", **_STRICT):
    action: Literal["cancel"]


Step = (
    CoreFrame
    | RuntimeFrame
    | Native
    | Settle
    | Clock
    | Silence
    | Disconnect
    | Reconnect
    | Dial
    | Expect
    | Include
    | Client
)


class CoreTurn(msgspec.Struct, **_STRICT):
    """The public outcome of the turn the real Core runs for a scenario (Core side)."""

    status: Literal["completed", "failed", "cancelled"]
    error_code: str | None = None  # the turn's x_corebox.error_code
    items: list[str] | None = None  # one line per public item, oldest first
    input: str = "hello"
    agent: dict[str, Any] = msgspec.field(default_factory=dict)  # public agent fields
    timers: dict[str, float] = msgspec.field(default_factory=dict)


class Adapter(msgspec.Struct, **_STRICT):
    """How the controlled adapter behaves natively: `setup` fails, is held until a
    `complete_setup` step, or succeeds; `close` fails until an `allow_close` step."""

    setup: Literal["ok", "fails", "held"] = "ok"
    close: Literal["ok", "fails"] = "ok"


class _ScenarioFile(msgspec.Struct, **_STRICT):
    name: str
    summary: str
    steps: list[Step]
    connected: bool = True
    adapter: Adapter = msgspec.field(default_factory=Adapter)
    workspace: dict[str, str] = msgspec.field(default_factory=dict)
    turn: CoreTurn | None = None


class Fixture(msgspec.Struct, **_STRICT):
    device_id: str
    credential: str
    agent_kind: str
    environment_id: str  # the Environment whose workspace the Runtime manages
    capabilities: dict[str, bool]
    synthetic: dict[str, Any]
    prefixes: dict[str, list[Step]]


class Scenario(msgspec.Struct, frozen=True):
    name: str
    summary: str
    steps: list[Step]  # includes expanded
    connected: bool
    adapter: Adapter
    workspace: dict[str, str]  # files the fixture Environment's workspace starts with
    turn: CoreTurn | None = None  # the public outcome when the real Core runs the turn


# Loading.
def _read(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


def fixture() -> Fixture:
    try:
        return msgspec.json.decode(_read(FIXTURE_FILE), type=Fixture)
    except msgspec.DecodeError as exc:
        raise ScenarioError(f"{FIXTURE_FILE}: {exc}") from exc


def names() -> list[str]:
    """Every scenario's name, in file order."""
    files = sorted(
        entry.name
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".json") and entry.name != FIXTURE_FILE
    )
    return [name.removesuffix(".json") for name in files]


def load(name: str) -> Scenario:
    """Parse and check one scenario; raises ScenarioError naming the offending step."""
    try:
        parsed = msgspec.json.decode(_read(f"{name}.json"), type=_ScenarioFile)
    except (msgspec.DecodeError, FileNotFoundError) as exc:
        raise ScenarioError(f"{name}: {exc}") from exc
    if parsed.name != name:
        raise ScenarioError(f"{name}: the file declares name {parsed.name!r}")
    steps = _expand(parsed.steps, fixture().prefixes, name, ())
    for index, step in enumerate(steps):
        _check_step(step, f"{name} step {index}")
    return Scenario(
        name=name,
        summary=parsed.summary,
        steps=steps,
        connected=parsed.connected,
        adapter=parsed.adapter,
        workspace=dict(parsed.workspace),
        turn=parsed.turn,
    )


def load_all() -> list[Scenario]:
    return [load(name) for name in names()]


def _expand(
    steps: Iterable[Step], prefixes: Mapping[str, list[Step]], where: str, seen: tuple[str, ...]
) -> list[Step]:
    expanded: list[Step] = []
    for step in steps:
        if not isinstance(step, Include):
            expanded.append(step)
            continue
        if step.prefix not in prefixes or step.prefix in seen:
            raise ScenarioError(f"{where}: cannot include prefix {step.prefix!r}")
        expanded.extend(_expand(prefixes[step.prefix], prefixes, where, (*seen, step.prefix)))
    return expanded


def _check_step(step: Step, where: str) -> None:
    if isinstance(step, CoreFrame) and not step.injected and step.type not in CORE_TO_RUNTIME:
        raise ScenarioError(f"{where}: Core does not send {step.type!r}")
    if isinstance(step, RuntimeFrame) and not (step.raw or step.injected or step.type):
        raise ScenarioError(f"{where}: a Runtime frame needs a type")
    if isinstance(step, RuntimeFrame) and step.type and step.type not in RUNTIME_TO_CORE:
        raise ScenarioError(f"{where}: a Runtime does not send {step.type!r}")
    if isinstance(step, CoreFrame | RuntimeFrame) and step.raw and step.type:
        raise ScenarioError(f"{where}: a raw frame has no type")
    if isinstance(step, Dial) and VERSION in dial_versions(step):
        raise ScenarioError(f"{where}: dial versions must differ from the wire version")


def dial_versions(step: Dial) -> list[str]:
    """The versions a dial step offers, with `{version}` replaced by this build's."""
    return [version.replace("{version}", VERSION) for version in step.versions]


# Frames as text.
def wire_text(step: CoreFrame | RuntimeFrame, bindings: Bindings) -> str:
    """The exact text a scripted peer sends for `step`, placeholders substituted."""
    if step.raw:
        return step.raw
    envelope: dict[str, Any] = {"type": step.type}
    if step.id:
        envelope["id"] = step.id
    envelope["payload"] = bindings.substitute(step.payload)
    return json.dumps(envelope)


def parse_wire(data: str | bytes) -> dict[str, Any]:
    """Decode a received frame to `{type, id, payload}` for matching (trace dropped)."""
    value = json.loads(data)
    if not isinstance(value, dict):
        raise Mismatch("the frame is not a JSON object")
    return {
        "type": value.get("type", ""),
        "id": value.get("id", ""),
        "payload": value.get("payload") or {},
    }


# Placeholders and matching.
def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and len(value) > 1 and value[0] == "$"


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == 0 or value == [] or value == {}


class Bindings:
    """Placeholder values: bound from what the real Runtime sends, or preset."""

    def __init__(self, preset: Mapping[str, Any] | None = None) -> None:
        self.values: dict[str, Any] = dict(preset or {})

    def substitute(self, value: Any) -> Any:
        """Return `value` with every placeholder replaced; an unbound one is an error."""
        if is_placeholder(value):
            if value not in self.values:
                raise Mismatch(f"placeholder {value} is used before the Runtime sent it")
            return self.values[value]
        if isinstance(value, dict):
            return {key: self.substitute(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.substitute(item) for item in value]
        return value

    def match(self, expected: Any, actual: Any, path: str = "$") -> list[str]:
        """Compare deep-equal, binding unbound placeholders to the first non-empty value.

        Distinct placeholders may not bind to the same string: an old handle never
        stands for a new one. Returns the differing paths (empty when equal).
        """
        if is_placeholder(expected):
            if expected in self.values:
                bound = self.values[expected]
                return [] if bound == actual else [f"{path}: {actual!r} != {expected}={bound!r}"]
            if _empty(actual):
                return [f"{path}: {expected} needs a non-empty value"]
            if isinstance(actual, str) and actual in {
                v for v in self.values.values() if isinstance(v, str)
            }:
                return [f"{path}: {expected} reuses the value of another placeholder"]
            self.values[expected] = actual
            return []
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                return [f"{path}: expected an object, got {actual!r}"]
            problems = [f"{path}.{key}: unexpected" for key in actual if key not in expected]
            problems += [f"{path}.{key}: missing" for key in expected if key not in actual]
            for key in expected:
                if key in actual:
                    problems += self.match(expected[key], actual[key], f"{path}.{key}")
            return problems
        if isinstance(expected, list):
            if not isinstance(actual, list) or len(actual) != len(expected):
                return [f"{path}: expected {len(expected)} items, got {actual!r}"]
            return [
                problem
                for index, (want, got) in enumerate(zip(expected, actual, strict=True))
                for problem in self.match(want, got, f"{path}[{index}]")
            ]
        if type(expected) is not type(actual) or expected != actual:
            return [f"{path}: {actual!r} != {expected!r}"]
        return []

    def match_frame(self, expected: CoreFrame | RuntimeFrame, actual: Mapping[str, Any]) -> None:
        """Raise Mismatch unless `actual` ({type, id, payload}) is the scenario's frame."""
        problems: list[str] = []
        if actual.get("type") != expected.type:
            problems.append(f"type: {actual.get('type')!r} != {expected.type!r}")
        if actual.get("id", "") != expected.id:
            problems.append(f"id: {actual.get('id')!r} != {expected.id!r}")
        if not problems:
            problems = self.match(expected.payload, actual.get("payload") or {}, "payload")
        if problems:
            raise Mismatch(f"{expected.type} {expected.id}: " + "; ".join(problems))


__all__ = [
    "SILENCE_WINDOW_SECONDS",
    "Adapter",
    "Bindings",
    "Client",
    "Clock",
    "CoreExpect",
    "CoreFrame",
    "CoreTurn",
    "Dial",
    "Disconnect",
    "Expect",
    "Fixture",
    "Mismatch",
    "Native",
    "Reconnect",
    "RuntimeExpect",
    "RuntimeFrame",
    "Scenario",
    "ScenarioError",
    "Settle",
    "Silence",
    "Step",
    "dial_versions",
    "fixture",
    "is_placeholder",
    "load",
    "load_all",
    "names",
    "parse_wire",
    "wire_text",
]
