"""Several `corebox serve` processes on one PostgreSQL database (a throw-away server from
tests/support/postgres.py), driven by the official SDK over real sockets:

- two processes and four Runtimes (each process's in-process Runtime and a `corebox
  daemon` connected to each): 1,000 one-line echo turns of the scripted harness from
  16 clients, every one completed exactly once (one claim, one completion, one answer);
- kill -9 of one process while turns run: every input it acknowledged is there, and
  every turn it held is settled by the other (continued from its checkpoint or failed
  as the crash rules say), none left running;
- an automation due once fires once with both processes running;
- a stream opened on one process sees the events of a turn the other runs;
- agent updates, promotions without an expected pointer version and new skill versions
  sent at once through both processes all land, one after the other.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from openai import OpenAI

from allinone.config import KEYS
from allinone.core.cluster.signals import CHANNEL
from storage.journal_templates import type_name
from tests.api.support import core_key, http
from tests.conftest import API_KEY, ROOT, Server, start_server

TURNS = 1000
CLIENTS = 16
WAIT = 60.0
# Requests sent at once to one agent, through both processes in turn.
RACERS = 12
AUTHORIZATION = {"Authorization": f"Bearer {API_KEY}"}
ECHO = "echo {n}"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    env["COREBOX_API_KEY"] = API_KEY
    return env


def _sdk(server: Server) -> OpenAI:
    return OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        timeout=WAIT,
        _strict_response_validation=True,
    )


@contextlib.contextmanager
def _servers(tmp_path: Path, url: str, count: int = 2) -> Iterator[list[Server]]:
    """`count` processes on the database `url`, one data directory (keys, blobs)."""
    if "database_url" not in KEYS:
        pytest.skip("corebox serve takes no database URL in this build")
    data_dir = tmp_path / "data"
    env = {"COREBOX_DATABASE_URL": url}
    started: list[Server] = []
    try:
        for _ in range(count):
            started.append(start_server(data_dir, extra_env=env))
        yield started
    finally:
        for server in reversed(started):
            server.stop()


@contextlib.contextmanager
def _daemon(server: Server, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """A `corebox daemon` with a device of its own, connected to `server`."""
    credential = server.data_dir.parent / f"{name}.credential"
    created = subprocess.run(
        [sys.executable, "-m", "allinone", "devices", "create", name, "--data-dir",
         str(server.data_dir), "--url", server.base_url, "--credential-file", str(credential)],
        env=_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    process = subprocess.Popen(
        [sys.executable, "-m", "allinone", "daemon", "--core", f"{server.base_url}",
         "--credential-file", str(credential)],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=WAIT)


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def _new_session(client: OpenAI, text: str = "hello") -> str:
    """A scripted session whose first turn (`text`) ran to idle; its id."""
    session_id = None
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
    )
    with stream:
        for event in stream:
            if event.type == "agent.session.created":
                session_id = str(event.session.id)
            if event.type == "agent.session.idle":
                break
    assert session_id is not None
    return session_id


def _client_turns(server: Server, first: int, count: int) -> str:
    """One client: a session created with the first turn, then one echo turn after
    another, each sent once the previous one ended; returns the session id."""
    with _sdk(server) as client:
        session_id = _new_session(client, ECHO.format(n=first))
        for n in range(first + 1, first + count):
            _send_and_wait(client, session_id, ECHO.format(n=n))
    return session_id


def _send_and_wait(client: OpenAI, session_id: str, text: str) -> None:
    """Send one message with the session's stream open; read it until the turn ended."""
    with client.beta.agents.sessions.events.stream(session_id) as stream:
        client.beta.agents.sessions.events.create(session_id, events=[_message(text)])  # type: ignore[list-item]
        for event in stream:
            if event.type == "agent.session.turn.completed":
                return
            assert event.type not in ("agent.session.turn.failed", "agent.session.turn.cancelled")
    raise AssertionError(f"the stream of {session_id} ended before its turn did")


def _rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


def _until(url: str, condition: Callable[[], bool], deadline: float = WAIT) -> None:
    """Until `condition()` holds, looking again whenever a Core process signals a change
    (its notifications on the shared database)."""
    end = time.monotonic() + deadline
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        while not condition():
            left = end - time.monotonic()
            assert left > 0, "the condition did not come true in time"
            for _ in conn.notifies(timeout=min(left, 1.0), stop_after=1):
                pass


def test_two_processes_and_four_runtimes_complete_every_turn_once(
    tmp_path: Path, postgres_url: str
) -> None:
    with _servers(tmp_path, postgres_url) as (a, b), _daemon(a, "rt-a"), _daemon(b, "rt-b"):
        counts = [TURNS // CLIENTS + (1 if n < TURNS % CLIENTS else 0) for n in range(CLIENTS)]
        firsts = [sum(counts[:n]) for n in range(CLIENTS)]
        targets = [a if n % 2 == 0 else b for n in range(CLIENTS)]
        with ThreadPoolExecutor(CLIENTS) as pool:
            sessions = list(pool.map(_client_turns, targets, firsts, counts))
    assert len(set(sessions)) == CLIENTS
    turns = _rows(postgres_url, "SELECT id, status, core_process_id, device_id FROM turns")
    assert len(turns) == TURNS
    assert {row[1] for row in turns} == {"completed"}
    assert len({row[2] for row in turns}) == 2  # both processes claimed turns
    # Each turn ran once: one start, one completion, one answer, in the journal and items.
    stored = _rows(postgres_url, "SELECT type, count(*) FROM session_events GROUP BY type")
    by_type = {type_name(code): count for code, count in stored}
    assert by_type.get("agent.session.turn.in_progress") == TURNS, by_type
    assert by_type.get("agent.session.turn.completed") == TURNS, by_type
    answers = _rows(
        postgres_url,
        "SELECT t.id, count(i.id) FROM turns t LEFT JOIN items i ON i.turn_id = t.id"
        " AND i.type = 'message' AND i.payload LIKE %s"
        " GROUP BY t.id HAVING count(i.id) != 1",
        ('%"role":"assistant"%',),
    )
    assert answers == []
    assert len({row[3] for row in turns}) == 4  # the four Runtimes all ran turns


def test_a_killed_process_loses_no_input_and_its_turns_are_settled_by_the_other(
    tmp_path: Path, postgres_url: str
) -> None:
    with _servers(tmp_path, postgres_url) as (a, b):
        a_id = _cluster(a)["process_id"]
        acknowledged: list[tuple[str, str]] = []
        enough = threading.Event()
        stop = threading.Event()

        def client(n: int) -> None:
            with _sdk(a) as sdk:
                try:
                    session_id = _new_session(sdk)
                except Exception:
                    # Killed while its session was being made: it acknowledged nothing
                    # this client counted.
                    return
                turn = 0
                while not stop.is_set():
                    # Still running when the process is killed, and short enough that a
                    # turn the survivor continues from its checkpoint ends in the deadline.
                    text = f"slow {n}.{turn}\n/sleep 30"
                    try:
                        sdk.beta.agents.sessions.events.create(session_id, events=[_message(text)])  # type: ignore[list-item]
                    except Exception:
                        return  # the process is gone; what it acknowledged is counted
                    acknowledged.append((session_id, text))
                    if len(acknowledged) >= 20:
                        enough.set()
                    turn += 1

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(client, n) for n in range(8)]
            assert enough.wait(WAIT)

            def running_on_a() -> list[tuple[Any, ...]]:
                return _rows(
                    postgres_url,
                    "SELECT id FROM turns WHERE core_process_id = %s"
                    " AND status IN ('in_progress', 'waiting')",
                    (a_id,),
                )

            _until(postgres_url, lambda: bool(running_on_a()))  # kill it mid-run
            os.kill(a.process.pid, signal.SIGKILL)
            a.process.wait(timeout=WAIT)
            held = running_on_a()
            stop.set()
            for future in futures:
                future.result(timeout=WAIT)
        _until(postgres_url, lambda: not _unsettled(postgres_url), deadline=WAIT * 2)
        with _sdk(b) as sdk:
            for session_id, text in acknowledged:
                # Every page: a busy client's session holds more than one page of items.
                items = sdk.beta.agents.sessions.items.list(session_id, order="asc", limit=100)
                quoted = json.dumps(text)[1:-1]  # as it appears inside a JSON string
                assert any(quoted in json.dumps(item.model_dump()) for item in items), text
        gone = _rows(postgres_url, "SELECT stop_reason FROM core_processes WHERE id = %s", (a_id,))
        assert gone == [("lapsed",)]
        # The dead process held running turns; each ended (continued by b from its
        # checkpoint, or failed as interrupted), none replayed.
        assert held
        for (turn_id,) in held:
            [(status, error)] = _rows(
                postgres_url, "SELECT status, error_code FROM turns WHERE id = %s", (turn_id,)
            )
            assert status == "completed" or error == "execution_interrupted", (status, error)


def _unsettled(url: str) -> list[tuple[Any, ...]]:
    """Turns still running, or waiting for a re-claim, or queued."""
    return _rows(url, "SELECT id FROM turns WHERE status IN ('queued', 'in_progress', 'waiting')")


def test_an_automation_due_once_fires_once_with_two_processes(
    tmp_path: Path, postgres_url: str
) -> None:
    with _servers(tmp_path, postgres_url) as (_a, b):
        with _sdk(b) as client:
            due = int(time.time()) + 8  # a loaded machine may take seconds to answer
            automation = client.beta.agents.automations.create(
                type="once",
                name="once",
                run_at=due,
                target={
                    "type": "new_session",
                    "agent": {"model": "scripted"},
                    "environment": {"type": "none"},
                    "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                },
            )

        def both_beat_after_it_was_due() -> bool:
            rows = _rows(
                postgres_url,
                "SELECT count(*) FROM core_processes WHERE stopped_at IS NULL"
                " AND heartbeat_at > %s",
                (due + 1,),
            )
            return int(rows[0][0]) == 2

        # Both processes held the job (one registered it, the other followed the change)
        # and fired it at `due`; by their first heartbeat after it, both have tried.
        _until(postgres_url, both_beat_after_it_was_due, deadline=WAIT)
        invocations = _rows(
            postgres_url,
            "SELECT scheduled_at FROM automation_invocations WHERE automation_id = %s",
            (automation.id,),
        )
        assert invocations == [(due,)]
        assert _rows(postgres_url, "SELECT count(*) FROM sessions")[0][0] == 1


def test_a_stream_on_one_process_sees_a_turn_run_by_the_other(
    tmp_path: Path, postgres_url: str
) -> None:
    with _servers(tmp_path, postgres_url) as (a, b), _sdk(a) as on_a, _sdk(b) as on_b:
        b_id = _cluster(b)["process_id"]
        session_id = _new_session(on_a)
        # Sent through b, whose queue wakes at once (a's by a notification): b runs the
        # turn, or, rarely, a does; then another one is sent, up to a bound.
        for attempt in range(10):
            with on_a.beta.agents.sessions.events.stream(session_id) as stream:
                on_b.beta.agents.sessions.events.create(
                    session_id,
                    events=[_message(f"across {attempt}")],  # type: ignore[list-item]
                )
                seen = []
                for event in stream:
                    seen.append(event.type)
                    if event.type == "agent.session.turn.completed":
                        break
            assert "agent.session.turn.output_text.delta" in seen
            claimers = _rows(
                postgres_url,
                "SELECT core_process_id FROM turns WHERE session_id = %s"
                " ORDER BY created_at DESC, id DESC LIMIT 1",
                (session_id,),
            )
            if claimers == [(b_id,)]:
                return
        raise AssertionError("process b never ran a turn sent through it")


def _cluster(server: Server) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/core/v1/cluster",
        headers={"Authorization": f"Bearer {core_key(server.data_dir)}"},
    )
    with urllib.request.urlopen(request, timeout=WAIT) as reply:
        body: dict[str, Any] = json.loads(reply.read())
    return body


def _at_once(servers: list[Server], call: Callable[[Server, OpenAI, int], Any]) -> list[Any]:
    """`call(server, client, i)` for i in 0 .. RACERS - 1 on threads released together,
    through each process in turn; each result, or the exception it raised."""
    clients = [_sdk(server) for server in servers]
    start = threading.Barrier(RACERS)

    def run(index: int) -> Any:
        start.wait()
        which = index % len(servers)
        try:
            return call(servers[which], clients[which], index)
        except Exception as exc:
            return exc

    try:
        with ThreadPoolExecutor(RACERS) as pool:
            return list(pool.map(run, range(RACERS)))
    finally:
        for client in clients:
            client.close()


def test_agent_updates_and_promotions_at_once_on_two_processes_all_land(
    tmp_path: Path, postgres_url: str
) -> None:
    with _servers(tmp_path, postgres_url) as servers, _sdk(servers[0]) as client:
        agent_id = client.beta.agents.create(model="scripted", instructions="start").id
        updated = _at_once(
            servers, lambda _, sdk, i: sdk.beta.agents.update(agent_id, instructions=f"u{i}")
        )
        assert not [r for r in updated if isinstance(r, Exception)], updated
        numbers = _rows(
            postgres_url,
            "SELECT number FROM agent_versions WHERE agent_id = %s ORDER BY number",
            (agent_id,),
        )
        assert numbers == [(n,) for n in range(1, RACERS + 2)]

        def promote(server: Server, _: OpenAI, index: int) -> int:
            # No expected pointer version: each move lands on top of the one before.
            path = f"/x/v1/agents/{agent_id}/deployments/production/promote"
            status, _, _ = http(
                server.base_url, "POST", path, {"version": index + 1}, AUTHORIZATION
            )
            return status

        assert _at_once(servers, promote) == [200] * RACERS
        pointers = _rows(
            postgres_url,
            "SELECT pointer_version FROM agent_deployments WHERE agent_id = %s AND name = %s",
            (agent_id, "production"),
        )
        assert pointers == [(RACERS,)]


def test_skill_versions_added_at_once_on_two_processes_all_land(
    tmp_path: Path, postgres_url: str
) -> None:
    manifest = b"---\nname: racer\ndescription: One of many versions.\n---\n"
    with _servers(tmp_path, postgres_url) as servers, _sdk(servers[0]) as client:
        skill_id = client.skills.create(files=[("SKILL.md", manifest)]).id
        added = _at_once(
            servers,
            lambda _, sdk, i: sdk.skills.versions.create(
                skill_id, files=[("SKILL.md", manifest + f"# {i}\n".encode())]
            ),
        )
        assert not [r for r in added if isinstance(r, Exception)], added
        assert sorted(int(r.version) for r in added) == list(range(2, RACERS + 2))
        assert client.skills.retrieve(skill_id).latest_version == str(RACERS + 1)
