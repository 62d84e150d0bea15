"""Device selection follows the latest heartbeat: a heartbeat that stops declaring a
capability a queued turn needs leaves that turn queued (never sent to a Runtime that
cannot run it, never failed), and a later heartbeat that declares it again lets it run.
`GET /core/v1/harnesses` shows what was declared, with the capability matrix.

Core runs with `--no-local-runtime`; the only Runtime is a raw WebSocket client.
Synchronisation is on frames: a turn that can run is dispatched (its `execution_prepare`
arrives), which proves the heartbeat before it was applied and the queue was scanned.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openai import OpenAI
from websockets.asyncio.client import ClientConnection

from tests.conftest import API_KEY
from tests.contract.test_remote_runtime import (
    CAPABILITIES,
    RawRuntime,
    http,
    new_device,
    receive,
    sdk,
    send,
    serve_core_only,
)

TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {"type": "object", "properties": {}},
}


def declare(**changes: bool) -> dict[str, bool]:
    return {**CAPABILITIES, **changes}


def create(client: OpenAI, tools: list[dict[str, Any]]) -> str:
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted", "tools": tools},  # type: ignore[list-item]
        environment={"type": "none"},
        input="hello",
    )
    return str(session.id)


def turn_status(client: OpenAI, session_id: str) -> str:
    return str(client.beta.agents.sessions.turns.list(session_id).data[0].status)


async def refuse(ws: ClientConnection, prepare: dict[str, Any]) -> None:
    """Answer a preparation with a rejection, so its turn ends without running."""
    await send(
        ws,
        "preparation_status",
        prepare["id"],
        {
            "revision": 0,
            "state": "rejected",
            "operation": "execution_prepare",
            "error_code": "unsupported_configuration",
        },
    )


def test_a_withdrawn_capability_leaves_the_turn_queued(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve_core_only(data_dir) as base_url:
        device = new_device(base_url, data_dir, "raw")
        raw = RawRuntime(base_url, device["device_id"], device["credential"])
        asyncio.run(_withdrawal(raw, base_url))


async def _withdrawal(raw: RawRuntime, base_url: str) -> None:
    status, info = await asyncio.to_thread(raw.bootstrap)
    assert status == 200
    ws = await raw.dial(info["protocol_version"])
    with sdk(base_url) as client:
        # 1. Function tools declared, but no turn can run here yet (no environment none).
        await ws.send(raw.heartbeat(declare(function_tools=True, environment_none=False)))
        needs_tools = await asyncio.to_thread(create, client, [TOOL])
        assert await asyncio.to_thread(turn_status, client, needs_tools) == "queued"

        # 2. The next heartbeat stops declaring function tools (and can now run turns
        #    without them). A turn without tools, queued after the first, is dispatched:
        #    proof that this heartbeat was applied and the queue scanned.
        await ws.send(raw.heartbeat(declare(function_tools=False, environment_none=True)))
        plain = await asyncio.to_thread(create, client, [])
        prepare = await receive(ws)
        assert prepare["type"] == "execution_prepare"
        assert prepare["payload"]["session_id"] == plain
        await refuse(ws, prepare)
        assert await asyncio.to_thread(turn_status, client, needs_tools) == "queued"

        status, listed = await asyncio.to_thread(
            http,
            "GET",
            f"{base_url}/core/v1/harnesses",
            None,
            {"Authorization": f"Bearer {API_KEY}"},
        )
        assert status == 200, listed
        [scripted] = listed["data"]
        assert scripted["kind"] == "scripted"
        [declared] = scripted["devices"]
        assert declared["device_id"] == raw.device_id
        assert declared["capabilities"]["function_tools"] is False
        assert scripted["protocols"]["scripted"]["structured_output"]["support"] == "unsupported"

        # 3. Declared again: the queued turn runs on this Runtime.
        await ws.send(raw.heartbeat(declare(function_tools=True, environment_none=True)))
        prepare = await receive(ws)
        assert prepare["type"] == "execution_prepare"
        assert prepare["payload"]["session_id"] == needs_tools
        assert [t["name"] for t in prepare["payload"]["configuration"]["function_tools"]] == [
            "lookup"
        ]
        await refuse(ws, prepare)
    await ws.close()
