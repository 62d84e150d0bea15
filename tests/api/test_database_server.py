"""PostgreSQL only: `corebox serve` on a database server that goes away for a while (a
throw-away server of its own, stopped and started again). While it is gone the process
keeps serving what it can; once it is back, turns run again, without a restart."""

from __future__ import annotations

from pathlib import Path

from tests.api.support import http, until
from tests.conftest import API_KEY, start_server
from tests.support.postgres import Cluster

PROJECT = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}
WAIT_SECONDS = 60.0
SCHEDULING_FAILED = "scheduling turns failed"


def test_turns_run_again_once_a_lost_database_server_is_back(
    tmp_path: Path, own_cluster: Cluster
) -> None:
    url = own_cluster.fresh_database()
    server = start_server(tmp_path / "data", extra_env={"COREBOX_DATABASE_URL": url})
    try:
        own_cluster.halt()
        try:
            # The turn scheduler met the lost server (it looks at least once a second).
            until(lambda: SCHEDULING_FAILED in server.log.read_text(errors="replace"), WAIT_SECONDS)
        finally:
            own_cluster.resume()
        body = {
            "agent": {"model": "scripted"},
            "environment": {"type": "none"},
            "input": "hello",
        }

        def created() -> dict[str, object] | None:
            # The first write after the server came back may meet a connection it
            # closed: that write is refused (503) and the next one goes through.
            status, session, _ = http(server.base_url, "POST", "/v1/agents/sessions", body, PROJECT)
            assert status in (200, 503), session
            return session if status == 200 else None

        session = until(created, WAIT_SECONDS)
        assert isinstance(session, dict)
        turns = f"/v1/agents/sessions/{session['id']}/turns"

        def completed() -> bool:
            status, page, _ = http(server.base_url, "GET", turns, headers=PROJECT)
            assert status == 200, page
            return bool(page["data"]) and page["data"][0]["status"] == "completed"

        until(completed, WAIT_SECONDS)
    finally:
        server.stop()
