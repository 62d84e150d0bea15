"""A turn's deadline goes on while its Runtime is lost: a turn suspended at its
checkpoint when its Runtime's connection closed, with no Runtime to claim it again,
fails `turn_deadline_exceeded` once its deadline passes, where it waited to be
re-claimed for good."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.core.orchestration.hostile import WAIT, connected, in_thread

DEADLINE = 3


def _create(client: OpenAI) -> list[Any]:
    """A scripted session with a deadline; its events until its turn settled."""
    return list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="hi",
            stream=True,
            extra_body={"x_corebox": {"turn_deadline_seconds": DEADLINE}},
        )
    )


def _checkpointed(client: OpenAI) -> str:
    """The id of the one session once its turn's checkpoint is recorded."""
    give_up = time.monotonic() + WAIT
    while True:
        sessions = client.beta.agents.sessions.list().data
        if sessions:
            turn = client.beta.agents.sessions.turns.list(sessions[0].id).data[0]
            if dict(turn.x_corebox)["checkpoint"] is not None:  # type: ignore[attr-defined]
                return sessions[0].id
        assert time.monotonic() < give_up, "the checkpoint was never recorded"
        threading.Event().wait(0.05)


def test_a_turn_whose_runtime_was_lost_fails_at_its_deadline(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            run_id = await peer.start_run()
            checkpoint = {"boundary": "between_model_calls", "cursor": "{}"}
            await peer.send("checkpoint", run_id, checkpoint)
            session_id = await in_thread(lambda: _checkpointed(client))
            await peer.ws.close()  # suspended for a re-claim; no Runtime comes back
            events = await asyncio.wait_for(created, WAIT)
            assert [e.type for e in events][-2:] == [
                "agent.session.turn.failed",
                "agent.session.idle",
            ]
            turn = await in_thread(
                lambda: client.beta.agents.sessions.turns.list(session_id).data[0]
            )
            assert turn.error is not None and turn.error.code == "request_timeout"
            x: dict[str, Any] = turn.x_corebox  # type: ignore[attr-defined]
            assert (x["error_code"], x["phase"]) == ("turn_deadline_exceeded", "settled")

    asyncio.run(main())
