"""A real Core and a Runtime that answers only what a test scripts.

`RealCore` runs the composition root (`allinone.app.App`) in this process without its
in-process Runtime, with short protocol timers so a test can watch them fire (production
never uses these values). `ScriptedPeer` is a Runtime written from the wire catalogue
alone: JSON envelopes over a plain `websockets` client, registered as a device through
`/core/v1/devices`. The official SDK drives the public API from worker threads.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlencode

from openai import OpenAI
from websockets.asyncio.client import ClientConnection, connect

from allinone.app import App, Started
from allinone.config import Config
from allinone.core.orchestration.timers import Timers
from runtime.proto.version import VERSION
from storage.database import Database
from tests.conftest import API_KEY
from tests.support.sdk import sdk_client

WAIT = 20.0
HARNESS = "scripted"
TIMERS = Timers(
    preparation_seconds=2.0,
    start_seconds=2.0,
    cancel_unconfirmed_seconds=1.0,
    lease_seconds=3,
    lease_renew_seconds=1.0,
    lease_sweep_seconds=0.5,
    retry_seconds=0.2,
)
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
    "local_environment": True,
    "preparation": True,
    "workspace_read_preparation": True,
    "workspace_output_export": True,
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
T = TypeVar("T")


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
        with exc:
            return exc.code, json.loads(exc.read())


class ScriptedPeer:
    """One Runtime connection; every frame it sends is chosen by the test."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.run_id = ""
        self.prep_id = ""
        self.started_with: list[dict[str, Any]] = []  # the last execution_start's input
        self._ts = 0

    async def receive(self, type_: str) -> dict[str, Any]:
        """The next frame from Core, which must be of `type_`."""
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), WAIT))
        assert frame["type"] == type_, frame
        return frame

    async def send(self, type_: str, id_: str, payload: dict[str, Any]) -> None:
        await self.ws.send(json.dumps({"type": type_, "id": id_, "payload": payload}))

    async def start_run(self) -> str:
        """Answer `execution_prepare` and `execution_start` as a Runtime must; return the
        Run id. Nothing of the Run is sent yet."""
        prepare = await self.receive("execution_prepare")
        self.prep_id = prepare["id"]
        status: dict[str, Any] = {"handle": "h-" + self.prep_id, "expires_at": _later()}
        await self.status({"revision": 1, "state": "preparing"} | status)
        status["executor_id"] = "executor-1"
        await self.status({"revision": 2, "state": "ready"} | status)
        start = await self.receive("execution_start")
        self.run_id = start["payload"]["run_id"]
        self.started_with = start["payload"]["input"]
        status["run_id"] = self.run_id
        await self.status({"revision": 3, "state": "starting"} | status)
        await self.status({"revision": 4, "state": "started"} | status)
        return self.run_id

    async def declare(self, capabilities: dict[str, bool], available: bool = True) -> None:
        """Send a heartbeat declaring the scripted harness with `capabilities`."""
        self._ts += 1
        kind = {
            "kind": HARNESS,
            "available": available,
            "capabilities": capabilities,
            "version": "1",
        }
        heartbeat = {
            "ts": self._ts,
            "active_requests": 0,
            "home_removal": False,
            "supported_agent_kinds": [kind],
            "daemon_version": "scripted-peer",
        }
        await self.ws.send(json.dumps({"type": "heartbeat", "payload": heartbeat}))

    async def read_only_ready(self) -> dict[str, Any]:
        """Answer a read-only `execution_prepare` with `preparing` then `ready`; return
        the request."""
        prepare = await self.receive("execution_prepare")
        assert prepare["payload"]["configuration"]["workspace_read_only"] is True
        self.prep_id = prepare["id"]
        status = {"handle": "ro-" + self.prep_id, "expires_at": _later()}
        await self.status({"revision": 1, "state": "preparing"} | status)
        await self.status({"revision": 2, "state": "ready", "executor_id": "reader"} | status)
        return prepare

    async def nothing_there(self) -> None:
        """Answer what a file write reads of its path before it begins (the file, then
        the parent's listing) as a workspace with nothing at the path."""
        read = await self.receive("workspace_read")
        assert read["payload"].get("operation", "") == "", read
        await self.send(
            "workspace_read_result", read["id"], {"outcome": "rejected", "error_code": "not_found"}
        )
        listing = await self.receive("workspace_read")
        assert listing["payload"]["operation"] == "directory", listing
        empty = {"entries": [], "truncated": False}
        completed = {"outcome": "completed", "close_acknowledged": True, "directory": empty}
        await self.send("workspace_read_result", listing["id"], completed)

    async def released(self) -> None:
        release = await self.receive("execution_release")
        assert release["id"] == self.prep_id, release

    async def status(self, payload: dict[str, Any]) -> None:
        await self.send("preparation_status", self.prep_id, payload)

    async def message(self, item_id: str, text: str) -> None:
        item = {"id": item_id, "phase": "final_answer"}
        await self.send("output_message", self.run_id, item | {"status": "in_progress"})
        await self.send("delta", self.run_id, {"item_id": item_id, "delta": text, "sequence": 1})
        await self.send("output_message", self.run_id, item | {"status": "completed", "text": text})

    async def play_turn(self, text: str) -> str:
        """A whole well-behaved turn answering `text`."""
        run_id = await self.start_run()
        await self.message(f"msg-{run_id}", text)
        await self.send("done", run_id, {})
        return run_id


def _later() -> int:
    return int(time.time() * 1000) + 300_000


class RealCore:
    """`async with RealCore(tmp_path) as core:` a running Core with no Runtime yet."""

    def __init__(self, tmp_path: Path, timers: Timers = TIMERS) -> None:
        self._data_dir = tmp_path / "data"
        self._timers = timers
        self._task: asyncio.Task[None] | None = None
        self._app: App | None = None
        self.port = 0
        self.db: Database | None = None
        self._sockets: list[ClientConnection] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> RealCore:
        config = Config(
            host="127.0.0.1",
            port=0,
            data_dir=self._data_dir,
            log_level="warning",
            api_key=API_KEY,
        )
        started: asyncio.Future[Started] = asyncio.get_running_loop().create_future()
        self._app = App(
            config,
            on_started=started.set_result,
            local_runtime=False,
            timers=self._timers,
        )
        self._task = asyncio.create_task(self._app.run())
        await asyncio.wait({started, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            await self._task
        self.port = started.result().port
        self.db = started.result().db
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for ws in self._sockets:
            await ws.close()
        assert self._app is not None and self._task is not None
        self._app.request_stop()
        await asyncio.wait_for(self._task, WAIT)

    def client(self) -> OpenAI:
        return sdk_client(
            base_url=f"{self.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            timeout=WAIT,
            _strict_response_validation=True,
        )

    async def runtime(self, capabilities: dict[str, bool] | None = None) -> ScriptedPeer:
        """Register a device, connect it and declare the scripted harness."""
        core_key = (self._data_dir / "secrets" / "core.key").read_text().strip()
        status, device = await asyncio.to_thread(
            http,
            "POST",
            f"{self.base_url}/core/v1/devices",
            {"name": "scripted peer"},
            {"Authorization": f"Bearer {core_key}"},
        )
        assert status == 201, device
        bearer = {"Authorization": f"Bearer {device['credential']}"}
        status, info = await asyncio.to_thread(
            http,
            "POST",
            f"{self.base_url}/api/v1/agent-daemon/bootstrap",
            {"device_id": device["id"]},
            bearer,
        )
        assert status == 200, info
        query = urlencode({"device_id": device["id"], "version": VERSION})
        ws = await connect(
            f"{info['ws_url']}?{query}",
            additional_headers=bearer,
            ping_interval=None,
            max_size=None,
        )
        self._sockets.append(ws)
        peer = ScriptedPeer(ws)
        await peer.declare(capabilities or CAPABILITIES)
        return peer


@asynccontextmanager
async def connected(
    tmp_path: Path, timers: Timers = TIMERS
) -> AsyncIterator[tuple[ScriptedPeer, OpenAI]]:
    """A running Core with a scripted Runtime connected to it and an SDK client for it."""
    async with RealCore(tmp_path, timers) as core:
        peer = await core.runtime()
        with core.client() as client:
            yield peer, client


async def in_thread(call: Callable[[], T]) -> T:
    """Run a blocking SDK call without blocking the loop the peer and Core share."""
    return await asyncio.to_thread(call)


async def initialized(peer: ScriptedPeer, client: OpenAI) -> Any:
    """A new `openai_hosted` environment, returned once its initialization (a read-only
    preparation with nothing to transfer) was released."""
    environment = await in_thread(
        lambda: client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    )
    await peer.read_only_ready()  # initialization: nothing to transfer
    await peer.released()
    return environment


def create_streamed(client: OpenAI, text: str) -> list[Any]:
    """Create a scripted session with `text`; its events until the turn settled."""
    return list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
        )
    )


def until_settled(client: OpenAI, session_id: str, act: Callable[[], object]) -> list[Any]:
    """Open the session's live stream, `act()`, then read until a turn's terminal event
    is followed by the session's idle or failed event."""
    seen: list[Any] = []
    with client.beta.agents.sessions.events.stream(session_id) as live:
        act()
        for event in live:
            seen.append(event)
            ended = any(
                e.type.rsplit(".", 1)[-1] in ("completed", "failed", "cancelled")
                and e.type.startswith("agent.session.turn.")
                and ".item." not in e.type
                for e in seen
            )
            if ended and event.type in ("agent.session.idle", "agent.session.failed"):
                return seen
    raise AssertionError(f"stream ended before the turn settled: {[e.type for e in seen]}")


async def settled_after(
    client: OpenAI, session_id: str, then: Callable[[], Awaitable[object]]
) -> list[Any]:
    """Open the session's live stream, run `then()` in the loop once it is open, and
    return the events until a turn settled."""
    loop = asyncio.get_running_loop()
    opened = asyncio.Event()
    reading = asyncio.create_task(
        in_thread(
            lambda: until_settled(client, session_id, lambda: loop.call_soon_threadsafe(opened.set))
        )
    )
    await asyncio.wait_for(opened.wait(), WAIT)
    await then()
    return await asyncio.wait_for(reading, WAIT)
