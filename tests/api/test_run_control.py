"""Control commands through the real server (seed 003): pause at the next checkpoint,
a paused turn that survives kill -9 as paused, resume with a new worker, two concurrent
resumes of which exactly one applies, cancel of a paused turn, idempotent replays."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.conftest import API_KEY, ROOT, Server, start_server

SCRIPT = "/say a\n/sleep 1500\n/say b\n/sleep 1500\n/say c"
SILENCE = 3.0  # the acceptance's window in which a paused turn emits nothing


@contextmanager
def sdk(server: Server) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    ) as client:
        yield client


class Reply:
    def __init__(self, status_code: int, body: Any) -> None:
        self.status_code = status_code
        self.body = body

    def json(self) -> Any:
        return self.body


def call(
    server: Server,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = None,
    bearer: str = API_KEY,
) -> Reply:
    headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.base_url}{path}", data=data, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return Reply(reply.status, json.loads(reply.read()))
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, json.loads(exc.read()))


def command(
    server: Server, session_id: str, action: str, key: str | None = None, **body: Any
) -> Reply:
    path = f"/x/v1/sessions/{session_id}/commands"
    return call(server, "POST", path, {"action": action, **body}, key)


# A command still `accepted` after this long never settles: the test fails, not hangs.
NEVER_SETTLES = 60.0


def settled(server: Server, command_id: str) -> dict[str, Any]:
    """The command once it left `accepted`."""
    give_up = time.monotonic() + NEVER_SETTLES
    while True:
        reply = call(server, "GET", f"/x/v1/commands/{command_id}")
        assert reply.status_code == 200
        row: dict[str, Any] = reply.json()
        if row["status"] != "accepted":
            return row
        assert time.monotonic() < give_up, f"command {command_id} is still accepted: {row}"
        time.sleep(0.02)


def started(client: OpenAI, script: str, **create: Any) -> str:
    """A session running `script`, returned once its first reply is durable."""
    stream = client.beta.agents.sessions.create(
        environment={"type": "none"}, input=script, stream=True, **create
    )
    session_id = ""
    for event in stream:
        if event.type == "agent.session.created":
            session_id = event.session.id
        if event.type == "agent.session.turn.item.done":
            break
    stream.close()
    return session_id


def start(client: OpenAI, script: str) -> str:
    """A scripted session running `script`, returned once its first reply is durable."""
    return started(client, script, agent={"model": "scripted"})


def awaiting(client: OpenAI, agent_id: str, script: str) -> tuple[str, Any]:
    """A session of agent `agent_id` running `script`, and the action its turn waits for."""
    stream = client.beta.agents.sessions.create(
        agent_id=agent_id, environment={"type": "none"}, input=script, stream=True
    )
    session_id, action = "", None
    for event in stream:
        if event.type == "agent.session.created":
            session_id = event.session.id
        if event.type == "agent.session.requires_action":
            action = event.session.required_actions[0]  # type: ignore[attr-defined]
            break
    stream.close()
    assert session_id and action is not None
    return session_id, action


def answer(client: OpenAI, session_id: str, action: Any) -> None:
    """Answer the pending call of `lookup` with 7."""
    client.beta.agents.sessions.events.create(
        session_id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": action.turn_id,
                "call_id": action.call_id,
                "success": True,
                "output": "7",
            }  # type: ignore[list-item]
        ],
    )


def assistant(client: OpenAI, session_id: str) -> list[str]:
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    return [i.content[0].text for i in items if getattr(i, "role", "") == "assistant"]  # type: ignore[union-attr]


def run_state(client: OpenAI, session_id: str) -> dict[str, Any]:
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    return {"status": turn.status, **dict(turn.x_corebox)}  # type: ignore[attr-defined]


def wait_idle(client: OpenAI, session_id: str) -> None:
    with client.beta.agents.sessions.events.stream(session_id) as live:
        if client.beta.agents.sessions.retrieve(session_id).status == "idle":
            return
        for event in live:
            if event.type == "agent.session.idle":
                return


def test_pause_survives_kill_9_and_resume_completes_in_order(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with sdk(server) as client:
            session_id = start(client, SCRIPT)
            asked = time.monotonic()
            reply = command(server, session_id, "pause", key="pause-1")
            assert reply.status_code == 202, reply.body
            paused = settled(server, reply.json()["id"])
            assert paused["status"] == "applied"
            assert time.monotonic() - asked < 2.0
            assert paused["actor"].startswith("key_")
            state = run_state(client, session_id)
            assert (state["status"], state["phase"]) == ("in_progress", "paused")
            assert state["checkpoint"]["boundary"] == "between_model_calls"
            threading.Event().wait(SILENCE)
            assert assistant(client, session_id) == ["a"]
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            after = run_state(client, session_id)
            assert (after["status"], after["phase"]) == ("in_progress", "paused")
            assert assistant(client, session_id) == ["a"]
            reply = command(
                restarted,
                session_id,
                "resume",
                expected_state_version=after["state_version"],
            )
            assert reply.status_code == 202, reply.body
            assert settled(restarted, reply.json()["id"])["status"] == "applied"
            wait_idle(client, session_id)
            final = run_state(client, session_id)
            assert final["status"] == "completed"
            assert final["worker_epoch"] > state["worker_epoch"]
            assert assistant(client, session_id) == ["a", "b", "c"]
            listed = call(restarted, "GET", f"/x/v1/sessions/{session_id}/commands").json()
            assert [(c["action"], c["status"]) for c in listed["data"]] == [
                ("pause", "applied"),
                ("resume", "applied"),
            ]
    finally:
        restarted.stop()


def test_two_concurrent_resumes_apply_exactly_once_and_cancel_ends_a_paused_turn(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            session_id = start(client, "/say a\n/hang")
            paused = command(server, session_id, "pause")
            assert settled(server, paused.json()["id"])["status"] == "applied"
            version = run_state(client, session_id)["state_version"]
            replies: list[Reply] = []
            ready = threading.Barrier(2)

            def resume() -> None:
                ready.wait()
                replies.append(
                    command(server, session_id, "resume", expected_state_version=version)
                )

            threads = [threading.Thread(target=resume) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            outcomes = sorted(settled(server, r.json()["id"])["status"] for r in replies)
            assert outcomes == ["applied", "rejected"]
            rejected = next(r.json() for r in replies if r.json()["status"] == "rejected")
            assert rejected["reason"] == "state_version_mismatch"

            again = command(server, session_id, "pause", key="k")
            assert settled(server, again.json()["id"])["status"] == "applied"
            replay = command(server, session_id, "pause", key="k")
            assert replay.status_code == 200 and replay.json()["id"] == again.json()["id"]
            assert command(server, session_id, "cancel", key="k").status_code == 409
            cancel = command(server, session_id, "cancel")
            assert cancel.status_code == 202
            assert cancel.json()["status"] == "applied"
            assert run_state(client, session_id)["status"] == "cancelled"
            late = command(server, session_id, "resume", turn_id=cancel.json()["turn_id"])
            assert (late.json()["status"], late.json()["reason"]) == ("rejected", "terminal")
            assert assistant(client, session_id) == ["a"]
    finally:
        server.stop()


def test_a_cancel_asked_while_a_pause_is_under_way_ends_the_turn_cancelled(
    tmp_path: Path,
) -> None:
    """Pause, then cancel at once, on running turns: the Run stops at its checkpoint for
    the pause, before or after the cancel reaches it; either way the turn ends cancelled
    there (never `completed` with the rest of its script unrun, never left paused with
    the cancel open), the cancel applied and the pause expired by it."""
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            sessions = [start(client, "/say a\n/sleep 1500\n/say b") for _ in range(4)]
            asked = []
            for session_id in sessions:
                pause = command(server, session_id, "pause")
                cancel = command(server, session_id, "cancel")
                assert (pause.status_code, cancel.status_code) == (202, 202)
                asked.append((session_id, pause.json()["id"], cancel.json()["id"]))
            for session_id, pause_id, cancel_id in asked:
                assert settled(server, cancel_id)["status"] == "applied", session_id
                pause = settled(server, pause_id)
                assert (pause["status"], pause["reason"]) == ("expired", "turn_cancelled")
                assert run_state(client, session_id)["status"] == "cancelled"
                assert assistant(client, session_id) == ["a"]
    finally:
        server.stop()


def corebox(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env.update({"PYTHONPATH": str(ROOT), "COREBOX_API_KEY": API_KEY})
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_the_cli_pauses_lists_and_cancels(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            session_id = start(client, "/say a\n/hang")
            where = ("--url", server.base_url, "--data-dir", str(tmp_path / "data"))
            paused = corebox("sessions", "pause", session_id, *where, "--reason", "lunch")
            assert paused.returncode == 0, paused.stderr
            command_id, action, status, turn_id, reason = paused.stdout.strip().split("\t")
            assert (action, status, reason) == ("pause", "accepted", "lunch")
            assert settled(server, command_id)["status"] == "applied"
            cancelled = corebox("sessions", "cancel", session_id, *where, "--json")
            assert cancelled.returncode == 0, cancelled.stderr
            assert json.loads(cancelled.stdout)["status"] == "applied"
            listed = corebox("sessions", "commands", session_id, *where)
            rows = [line.split("\t")[1:3] for line in listed.stdout.strip().splitlines()]
            assert rows == [["pause", "applied"], ["cancel", "applied"]]
            refused = corebox("sessions", "resume", "sess_missing", *where)
            assert refused.returncode == 1 and "HTTP 404" in refused.stderr
            assert run_state(client, session_id)["status"] == "cancelled"
            assert turn_id == client.beta.agents.sessions.turns.list(session_id).data[0].id
            # The same resources through the official SDK's generic methods.
            page = client.get(
                f"{server.base_url}/x/v1/sessions/{session_id}/commands", cast_to=object
            )
            assert [c["action"] for c in page["data"]] == ["pause", "cancel"]  # type: ignore[index]
            late = client.post(
                f"{server.base_url}/x/v1/sessions/{session_id}/commands",
                cast_to=object,
                body={"action": "resume", "turn_id": turn_id},
            )
            assert late["reason"] == "terminal"  # type: ignore[index]
            # The command line says the same, and exits with status 1.
            again = corebox("sessions", "resume", session_id, *where, "--turn", turn_id)
            assert (again.returncode, again.stderr) == (1, ""), again.stderr
            assert again.stdout.strip().split("\t")[1:] == [
                "resume",
                "rejected",
                turn_id,
                "terminal",
            ]
    finally:
        server.stop()


def test_a_paused_turn_quiesces_its_environment_and_resumes_it(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            stream = client.beta.agents.sessions.create(
                agent={"model": "scripted"},
                environment={"type": "openai_hosted"},
                input="/say a\n/sleep 1000\n/write out.txt b\n/read out.txt\n/say {read}",
                stream=True,
            )
            session_id = ""
            for event in stream:
                if event.type == "agent.session.created":
                    session_id = event.session.id
                if event.type == "agent.session.turn.item.done":
                    break
            stream.close()
            paused = command(server, session_id, "pause")
            assert settled(server, paused.json()["id"])["status"] == "applied"
            resumed = command(server, session_id, "resume")
            assert settled(server, resumed.json()["id"])["status"] == "applied"
            wait_idle(client, session_id)
            assert run_state(client, session_id)["status"] == "completed"
            assert assistant(client, session_id) == ["a", "b"]
    finally:
        server.stop()
    log = server.log.read_text()
    quiesced = re.search(r"environment_quiesce (pause-turn_\S+) accepted", log)
    assert quiesced is not None, "the paused turn's Environment was not quiesced"
    assert f"environment_resume {quiesced.group(1)} accepted" in log


LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a value up.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
}


def test_a_turn_paused_while_waiting_takes_its_result_and_continues_on_resume(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            agent = client.beta.agents.create(model="scripted", tools=[LOOKUP])  # type: ignore[list-item]
            session_id, action = awaiting(client, agent.id, "/call lookup {}\n/say got {result}")
            paused = command(server, session_id, "pause")
            assert settled(server, paused.json()["id"])["status"] == "applied"
            state = run_state(client, session_id)
            assert (state["status"], state["phase"]) == ("waiting", "paused")
            assert state["checkpoint"]["boundary"] == "awaiting_function_result"
            answer(client, session_id, action)
            assert run_state(client, session_id)["phase"] == "paused"  # nothing delivered
            resumed = command(server, session_id, "resume")
            assert settled(server, resumed.json()["id"])["status"] == "applied"
            wait_idle(client, session_id)
            assert run_state(client, session_id)["status"] == "completed"
            assert assistant(client, session_id) == ["got 7"]
    finally:
        server.stop()
