"""Every way a turn's observation can be lost ends in a finite, visible outcome
(DESIGN.md section 4, step 7), driven through a Runtime that answers only what the test
scripts: nothing is fabricated, the failure names why, and the session stays usable."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

from openai import OpenAI

from runtime.proto import limits
from tests.allinone.core.orchestration.hostile import (
    WAIT,
    ScriptedPeer,
    connected,
    create_streamed,
    in_thread,
    initialized,
)


def _failed_with(client: OpenAI, events: list[Any], code: str) -> str:
    """The turn failed with `code` and the session went idle; the turn's message."""
    assert [e.type for e in events][-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    session_id = events[0].session.id
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "failed"
    extension: dict[str, Any] = turn.x_corebox  # type: ignore[attr-defined]
    assert extension["error_code"] == code, extension
    assert extension["phase"] == "settled", extension  # an ended turn runs no more
    assert turn.error is not None
    return str(turn.error.message)


def test_a_connection_lost_while_running_fails_the_turn_event_stream_incomplete(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            run_id = await peer.start_run()
            await peer.send("output_message", run_id, {"id": "m1", "status": "in_progress"})
            await peer.ws.close()
            events = await asyncio.wait_for(created, WAIT)
            message = await in_thread(
                lambda: _failed_with(client, events, "event_stream_incomplete")
            )
            # It names what was in flight when the Runtime went away.
            assert "(connection_closed); the outcome of model output m1 is unknown" in message
            session_id = events[0].session.id
            page = await in_thread(
                lambda: client.beta.agents.sessions.items.list(session_id, order="asc")
            )
            items = page.data
            # What arrived before the loss is kept; nothing is fabricated after it.
            assert [i.status for i in items if i.type == "message" and i.role == "assistant"] == [
                "incomplete"
            ]

    asyncio.run(main())


def test_an_unanswered_preparation_fails_the_turn_delivery_unknown(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            await peer.receive("execution_prepare")  # never answered
            events = await asyncio.wait_for(created, WAIT)
            message = await in_thread(lambda: _failed_with(client, events, "delivery_unknown"))
            assert "preparation_timeout" in message

    asyncio.run(main())


def test_a_connection_lost_while_preparing_fails_the_turn_delivery_unknown(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            await peer.receive("execution_prepare")
            await peer.ws.close()
            events = await asyncio.wait_for(created, WAIT)
            message = await in_thread(lambda: _failed_with(client, events, "delivery_unknown"))
            assert "preparation outcome is unknown" in message

    asyncio.run(main())


async def _ready(peer: ScriptedPeer) -> dict[str, Any]:
    """Answer an `execution_prepare` with `preparing` then `ready`; the status fields."""
    prepare = await peer.receive("execution_prepare")
    assert prepare["payload"]["configuration"].get("workspace_read_only") is not True
    peer.prep_id = prepare["id"]
    status: dict[str, Any] = {"handle": "h-" + peer.prep_id, "expires_at": 2**42}
    await peer.status({"revision": 1, "state": "preparing"} | status)
    await peer.status({"revision": 2, "state": "ready", "executor_id": "executor-1"} | status)
    return status


def test_an_unanswered_start_fails_the_running_turn_delivery_unknown(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            await _ready(peer)
            await peer.receive("execution_start")  # never answered
            events = await asyncio.wait_for(created, WAIT)
            assert "agent.session.turn.in_progress" in [e.type for e in events]
            message = await in_thread(lambda: _failed_with(client, events, "delivery_unknown"))
            assert "start of the execution is unconfirmed" in message

    asyncio.run(main())


def test_a_refused_start_fails_the_turn_execution_unavailable(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            status = await _ready(peer)
            await peer.receive("execution_start")
            # No write is open on any Environment: the refusal is final.
            await peer.status(
                {
                    "revision": 0,
                    "state": "rejected",
                    "operation": "execution_start",
                    "error_code": "resource_unavailable",
                }
                | status
            )
            events = await asyncio.wait_for(created, WAIT)
            message = await in_thread(lambda: _failed_with(client, events, "execution_unavailable"))
            assert "resource_unavailable" in message

    asyncio.run(main())


def _empty_tar() -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w"):
        pass
    return base64.b64encode(buffer.getvalue()).decode()


async def _open_write(peer: ScriptedPeer) -> dict[str, Any]:
    """Follow a two-byte write up to its commit, which is left unanswered; return it."""
    await peer.read_only_ready()
    await peer.nothing_there()
    begin = await peer.receive("workspace_write")
    await peer.send("workspace_write_result", begin["id"], {"outcome": "ready"})
    chunk = await peer.receive("workspace_write")
    await peer.send("workspace_write_result", chunk["id"], {"outcome": "received", "offset": 2})
    commit = await peer.receive("workspace_write")
    assert commit["payload"]["step"] == "commit"
    return commit


async def _capture_nothing(peer: ScriptedPeer) -> None:
    """Answer the turn-end capture with an empty outputs/ archive."""
    await peer.read_only_ready()
    export = await peer.receive("workspace_export")
    archive = _empty_tar()
    size = len(base64.b64decode(archive))
    await peer.send(
        "workspace_export_result", export["id"], {"outcome": "chunk", "offset": 0, "data": archive}
    )
    following = await peer.receive("workspace_export")
    await peer.send(
        "workspace_export_result", following["id"], {"outcome": "completed", "offset": size}
    )
    await peer.released()


def test_a_start_refused_during_an_open_write_is_retried_once_it_settled(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            environment = await initialized(peer, client)
            writing = asyncio.create_task(
                in_thread(
                    lambda: client.beta.agents.environments.files.create(
                        environment.id, type="inline", path="/workspace/a.txt", data="aGk="
                    )
                )
            )
            commit = await _open_write(peer)
            write_prep = peer.prep_id
            created = asyncio.create_task(
                in_thread(
                    lambda: list(
                        client.beta.agents.sessions.create(
                            agent={"model": "scripted"},
                            environment={
                                "type": "openai_hosted",
                                "environment_id": environment.id,
                            },
                            input="hi",
                            stream=True,
                        )
                    )
                )
            )
            status = await _ready(peer)
            start = await peer.receive("execution_start")
            await peer.status(
                {
                    "revision": 0,
                    "state": "rejected",
                    "operation": "execution_start",
                    "error_code": "resource_unavailable",
                }
                | status
            )
            # The write settles: its receipt, then its release and the start sent
            # again on the same, still ready, handle (in either order).
            await peer.send(
                "workspace_write_result",
                commit["id"],
                {"outcome": "completed", "size_bytes": 2},
            )
            frames = [await _any(peer), await _any(peer)]
            by_type = {f["type"]: f for f in frames}
            assert by_type["execution_release"]["id"] == write_prep
            again = by_type["execution_start"]
            assert again["id"] == start["id"] and again["payload"] == start["payload"]
            await asyncio.wait_for(writing, WAIT)
            run_id = start["payload"]["run_id"]
            running = status | {"run_id": run_id}
            await peer.status({"revision": 3, "state": "starting"} | running)
            await peer.status({"revision": 4, "state": "started"} | running)
            peer.run_id = run_id
            await peer.message("m1", "after the write")
            await peer.send("done", run_id, {})
            await _capture_nothing(peer)
            events = await asyncio.wait_for(created, WAIT)
            assert [e.type for e in events][-2:] == [
                "agent.session.turn.completed",
                "agent.session.idle",
            ]

    asyncio.run(main())


async def _any(peer: ScriptedPeer) -> dict[str, Any]:
    """The next frame from Core, whatever its type."""
    frame: dict[str, Any] = json.loads(await asyncio.wait_for(peer.ws.recv(), WAIT))
    return frame


def test_a_start_past_the_frame_limit_is_never_sent_and_fails_its_turn_alone(
    tmp_path: Path,
) -> None:
    """A Runtime answering with a handle so long that the start (which names it) with
    the turn's input passes the wire's frame limit: Core does not send a frame the
    Runtime would close the connection on. The turn fails `input_too_large`, known
    never delivered, its preparation is released, and the connection serves on."""

    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            text = "x" * (limits.MAX_INPUT_BYTES - 100)
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, text)))
            peer.prep_id = (await peer.receive("execution_prepare"))["id"]
            handle = "h" * (limits.MAX_FRAME_BYTES - limits.MAX_INPUT_BYTES // 2)
            ready = {"revision": 1, "state": "ready", "handle": handle, "executor_id": "e1"}
            await peer.status(ready | {"expires_at": int(time.time() * 1000) + 300_000})
            await peer.released()  # the next frame: the start was never sent
            events = await asyncio.wait_for(created, WAIT)
            message = await in_thread(lambda: _failed_with(client, events, "input_too_large"))
            assert "never delivered" in message and "frame limit" in message, message
            turn = await in_thread(
                lambda: client.beta.agents.sessions.turns.list(events[0].session.id).data[0]
            )
            assert turn.error is not None and turn.error.code == "invalid_request"
            again = asyncio.create_task(in_thread(lambda: create_streamed(client, "again")))
            await peer.play_turn("fine")
            after = await asyncio.wait_for(again, WAIT)
            assert [e.type for e in after][-2:] == [
                "agent.session.turn.completed",
                "agent.session.idle",
            ]

    asyncio.run(main())
