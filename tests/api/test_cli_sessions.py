"""`corebox sessions list` against the shared server, in a project of its own."""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from allinone import cli
from allinone.session_list import headline
from tests.api.support import Surface, surface
from tests.api.test_overlays import running, send

__all__ = ["surface"]


def test_sessions_list_names_each_session_newest_activity_first(
    surface: Surface, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, key = surface.project()
    client = surface.client(key)
    planner = client.beta.agents.create(model="scripted", name="Planner").id
    inputs = ("/say Booked.\nPlan a trip to Lisbon", "/stream 3", "Draft it")
    ids = [
        client.beta.agents.sessions.create(
            environment={"type": "none"},
            input=text,
            metadata={"title": "Q3 report"} if n == 2 else None,
            **({"agent_id": planner} if n == 0 else {"agent": {"model": "scripted"}}),  # type: ignore[arg-type]
        ).id
        for n, text in enumerate(inputs)
    ]
    key_file = tmp_path / "key"
    key_file.write_text(key, encoding="utf-8")
    where = ["--url", surface.server.base_url, "--api-key-file", str(key_file)]
    for session_id in ids:  # settled, so their activity no longer moves
        while client.beta.agents.sessions.retrieve(session_id).status != "idle":
            pass
    # New activity on the first, a second later (activity is kept to the second), moves
    # it to the top.
    latest = max(client.beta.agents.sessions.retrieve(s).last_active_at or 0 for s in ids)
    while time.time() < latest + 1:
        time.sleep(0.05)
    client.beta.agents.sessions.events.create(
        ids[0],
        events=[
            {
                "type": "agent.session.input.message",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "again"}]}],
            }
        ],
    )
    while client.beta.agents.sessions.retrieve(ids[0]).status != "idle":
        pass

    assert cli.main(["sessions", "list", *where]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    listed = {row[0]: row for row in rows}
    assert set(listed) == set(ids) and rows[0][0] == ids[0], rows
    # id, status, last activity (UTC), agent, name: the first line that is not a
    # directive, else the first line; a title wins.
    sessions = {s: client.beta.agents.sessions.retrieve(s) for s in ids}
    shown = (("Planner", "Plan a trip to Lisbon"), ("scripted", "/stream 3"))
    for session_id, (agent, name) in zip(ids, (*shown, ("scripted", "Q3 report")), strict=True):
        _, status, active, shown_agent, shown_name = listed[session_id]
        when = datetime.strptime(active, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert when.timestamp() == sessions[session_id].last_active_at
        assert (status, shown_agent, shown_name) == ("idle", agent, name)

    assert cli.main(["sessions", "list", *where, "--limit", "1", "--json"]) == 0
    [only] = json.loads(capsys.readouterr().out)  # the newest session, as the API lists
    assert (only["id"], only["metadata"]) == (ids[2], {"title": "Q3 report"})
    with pytest.raises(SystemExit):
        cli.main(["sessions", "list", *where, "--limit", "0"])
    assert "from 1 to 100" in capsys.readouterr().err
    with socket.socket() as held:  # bound, never listening: nothing answers there
        held.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{held.getsockname()[1]}"
        assert cli.main(["sessions", "list", *where, "--url", nowhere]) == 1
    assert f"cannot reach corebox at {nowhere}" in capsys.readouterr().err


def test_a_session_name_is_cut_at_72_characters() -> None:
    long = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "x" * 80}],
    }
    assert headline(long) == "x" * 72 + "…"
    assert headline({"type": "message", "role": "assistant", "content": []}) == ""


def test_a_session_whose_turn_a_pause_holds_is_listed_paused(
    surface: Surface, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, key = surface.project()
    client = surface.client(key)
    session = running(client, "/say Waiting for you\n/hang")
    key_file = tmp_path / "key"
    key_file.write_text(key, encoding="utf-8")
    where = ["--url", surface.server.base_url, "--api-key-file", str(key_file)]

    def listed() -> str:
        assert cli.main(["sessions", "list", *where]) == 0
        [row] = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
        return row[1]

    assert listed() == "in_progress"
    send(client, session.id, "pause")
    while client.beta.agents.sessions.turns.list(session.id).data[0].x_corebox["phase"] != "paused":
        pass
    # The session itself is still in progress; the list says what holds its turn.
    assert client.beta.agents.sessions.retrieve(session.id).status == "in_progress"
    assert listed() == "paused"
    send(client, session.id, "cancel")
    while client.beta.agents.sessions.retrieve(session.id).status != "idle":
        pass
    assert listed() == "idle"
