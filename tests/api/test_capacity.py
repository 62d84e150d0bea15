"""More turns at once than the Runtime has Executors for: the ones it has no room for
wait queued and run as Executors free up (seed 000: a `preparation_capacity` refusal
leaves the turn queued for a retry); none fails for the load alone."""

from __future__ import annotations

import time
from pathlib import Path

from runtime.proto import limits
from tests.api.test_run_control import sdk
from tests.conftest import start_server

# A turn that never settles within this is the failure the test looks for, not a hang.
NEVER_SETTLES = 120.0


def test_turns_beyond_the_executors_wait_their_turn_and_all_complete(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            ids = [
                client.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input="/sleep 1500\n/say done",
                ).id
                for _ in range(limits.MAX_EXECUTORS + 5)
            ]
            give_up = time.monotonic() + NEVER_SETTLES
            ended: dict[str, str] = {}
            while len(ended) < len(ids):
                for session_id in set(ids) - set(ended):
                    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
                    if turn.status in ("completed", "failed", "cancelled"):
                        ended[session_id] = turn.status
                assert time.monotonic() < give_up, f"{len(ids) - len(ended)} turns never ended"
                time.sleep(0.2)
            assert set(ended.values()) == {"completed"}, ended
    finally:
        server.stop()
