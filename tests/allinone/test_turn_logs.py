"""The real log of served turns (Core and its in-process Runtime, at debug, in both
formats): every line about a turn names its session and turn, the Runtime's lines
included, and no frame's content (a prompt) is ever written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.conftest import API_KEY, start_server

PROMPT_MARKER = "zebra-7731-prompt"


def turns_served(data_dir: Path, log_format: str) -> tuple[str, list[tuple[str, str]]]:
    """Serve a completed turn and a cancelled one; the log and (session, turn) of each."""
    server = start_server(data_dir, log_level="debug", extra_env={"COREBOX_LOG_FORMAT": log_format})
    served = []
    try:
        with OpenAI(base_url=server.base_url + "/v1", api_key=API_KEY, max_retries=0) as client:
            events = list(
                client.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input=f"/think plan\n/say {PROMPT_MARKER}",
                    stream=True,
                )
            )
            session_id = events[0].session.id  # type: ignore[attr-defined]
            served.append(
                (session_id, client.beta.agents.sessions.turns.list(session_id).data[0].id)
            )
            served.append((session_id, cancelled_turn(client, session_id)))
    finally:
        server.stop()
    return server.log.read_text(encoding="utf-8", errors="replace"), served


def cancelled_turn(client: OpenAI, session_id: str) -> str:
    message = {
        "type": "agent.session.input.message",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "/say wait\n/hang"}]}
        ],
    }
    with client.beta.agents.sessions.events.stream(session_id) as live:
        client.beta.agents.sessions.events.create(session_id, events=[message])  # type: ignore[list-item]
        for event in live:
            if event.type == "agent.session.turn.in_progress":
                client.beta.agents.sessions.events.create(
                    session_id,
                    events=[{"type": "agent.session.input.cancel"}],  # type: ignore[list-item]
                )
            if event.type == "agent.session.turn.cancelled":
                return str(event.turn_id)  # type: ignore[union-attr]
    raise AssertionError("the turn was not cancelled")


def records(log: str, log_format: str) -> Iterator[dict[str, Any]]:
    """Each line as its fields (`raw` keeps the line itself)."""
    for line in log.splitlines():
        if log_format == "json":
            if line.startswith("{"):
                yield {**json.loads(line), "raw": line}
            continue
        if line.startswith("time="):
            fields = dict(pair.split("=", 1) for pair in _logfmt_pairs(line))
            yield {**fields, "raw": line}


def _logfmt_pairs(line: str) -> Iterator[str]:
    """`key=value` pairs of a logfmt line (quoted values may hold spaces)."""
    key, rest = "", line
    while rest:
        key, _, rest = rest.partition("=")
        if rest.startswith('"'):
            value, end = json.JSONDecoder().raw_decode(rest)
            rest = rest[end:].lstrip()
        else:
            value, _, rest = rest.partition(" ")
        yield f"{key}={value}"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_every_line_about_a_turn_names_its_session_and_turn(
    tmp_path: Path, log_format: str
) -> None:
    log, served = turns_served(tmp_path / "data", log_format)
    assert PROMPT_MARKER not in log  # no frame dump, no prompt
    lines = list(records(log, log_format))
    assert lines and all(line["level"] for line in lines)
    for session_id, turn_id in served:
        about = [line for line in lines if turn_id in line["raw"]]
        assert about, f"nothing logged about {turn_id}"
        for line in about:
            assert line.get("session_id") == session_id, line["raw"]
            assert line.get("turn_id") == turn_id, line["raw"]
        runtime = [
            line
            for line in lines
            if line["logger"].startswith("runtime.") and line.get("turn_id") == turn_id
        ]
        assert runtime, f"no Runtime line names {turn_id}"
        assert all(line["session_id"] == session_id for line in runtime)
