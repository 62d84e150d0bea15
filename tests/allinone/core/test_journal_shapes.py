"""Every public event keeps its exact wire bytes whatever the journal stores.

A scripted session that exercises text, reasoning, command observations, usage, a
function call, an approval, a user choice, a failure and a cancellation is run against a
real server; the SSE `data:` lines it produces are compared byte for byte with a golden
file. Only values that differ from run to run are normalised: identifiers (numbered in
order of first appearance), Unix times and the host's confinement description.

Run with `COREBOX_WRITE_GOLDEN=1` to rewrite the golden file (only when a wire shape is
meant to change).
"""

from __future__ import annotations

import http.client
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import API_KEY, Server, start_server

GOLDEN = Path(__file__).with_name("journal_events.golden")
HEADERS = {
    "Authorization": f"Bearer {API_KEY}",
    "Content-Type": "application/json",
    "OpenAI-Beta": "agents=v1",
}
ID = re.compile(r"\b([a-z]+)_([0-9a-f]{16,})\b")
# Configuration digests cover the agent's id, so they are numbered like identifiers.
DIGEST = re.compile(r"\b(sha256):([0-9a-f]{64})\b")
TIME = re.compile(r'("(?:created_at|last_active_at|started_at|completed_at|updated_at)":)\d+')
CONFINEMENT = re.compile(r'"confinement":(null|\{[^{}]*\})')
# Stream padding (`obfuscation`) is random per event and added as an event is sent, not
# stored: its length and alphabet are checked, its letters normalised.
OBFUSCATION = re.compile(r'"obfuscation":"[A-Za-z0-9]{1,64}"')
LOOKUP_TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


class Stream:
    """One SSE response, read event by event as raw `data:` lines."""

    def __init__(self, server: Server, method: str, path: str, body: Any = None) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        payload = None if body is None else json.dumps(body).encode()
        self._conn.request(
            method, path, body=payload, headers={**HEADERS, "Accept": "text/event-stream"}
        )
        self._response = self._conn.getresponse()
        assert self._response.status == 200

    def events(self) -> Iterator[tuple[str, str]]:
        event_type = ""
        while True:
            line = self._response.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if text.startswith("event: "):
                event_type = text[len("event: ") :]
            elif text.startswith("data: "):
                yield event_type, text[len("data: ") :]

    def until(self, wanted: str, seen: list[str]) -> dict[str, Any]:
        for event_type, data in self.events():
            seen.append(data)
            if event_type == wanted:
                decoded: dict[str, Any] = json.loads(data)
                return decoded
        raise AssertionError(f"the stream ended before {wanted}")

    def close(self) -> None:
        self._response.close()  # it holds the socket until closed itself
        self._conn.close()


def post(server: Server, path: str, body: Any) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers=HEADERS)
        response = conn.getresponse()
        raw = response.read()
        assert response.status in (200, 202), raw
        return json.loads(raw) if raw else None
    finally:
        conn.close()


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def settled(stream: Stream, seen: list[str]) -> dict[str, Any]:
    """Read until the session is idle after a turn ended; return that idle event."""
    ended = False
    for event_type, data in stream.events():
        seen.append(data)
        if event_type.startswith("agent.session.turn.") and event_type.rsplit(".", 1)[-1] in (
            "completed",
            "failed",
            "cancelled",
        ):
            ended = True
        if event_type == "agent.session.idle" and ended:
            decoded: dict[str, Any] = json.loads(data)
            return decoded
    raise AssertionError("the stream ended before the turn settled")


def varied_session(server: Server) -> list[str]:
    """Run the scripted session; return every event's `data:` line in stream order."""
    agent = post(server, "/v1/agents", {"model": "scripted", "tools": [LOOKUP_TOOL]})
    seen: list[str] = []
    creation = Stream(
        server,
        "POST",
        "/v1/agents/sessions",
        {
            "agent_id": agent["id"],
            "environment": {"type": "none"},
            "input": "/think pondering\n/say hello there, a reply longer than sixteen"
            "\n/command ls -l\n/usage 7 11",
            "metadata": {"purpose": "golden"},
            "stream": True,
        },
    )
    session_id = settled(creation, seen)["session"]["id"]
    creation.close()
    live = Stream(server, "GET", f"/v1/agents/sessions/{session_id}/events")
    path = f"/v1/agents/sessions/{session_id}/events"
    post(server, path, {"events": [message('/call lookup {"q": "x"}\n/say got {result}')]})
    action = live.until("agent.session.requires_action", seen)["session"]["required_actions"][0]
    result = {
        "type": "agent.session.input.tool_result",
        "turn_id": action["turn_id"],
        "call_id": action["call_id"],
        "success": True,
        "output": "forty-two",
    }
    post(server, path, {"events": [result]})
    settled(live, seen)
    post(server, path, {"events": [message("/permission shell run it\n/say {decision}")]})
    action = live.until("agent.session.requires_action", seen)["session"]["required_actions"][0]
    approval = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": action["request_id"],
        "response": {"type": "mcp_tool_call", "decision": "approve"},
    }
    post(server, path, {"events": [approval]})
    settled(live, seen)
    post(server, path, {"events": [message("/choose Colour? | red | blue\n/say {choice}")]})
    prompt = live.until("agent.session.requires_action", seen)["session"]["x_corebox"]
    ask = prompt["required_actions"][0]
    answer = {
        "type": "x_corebox.input.user_choice",
        "ask_id": ask["ask_id"],
        "question_answers": [{"question_id": ask["questions"][0]["id"], "answers": ["blue"]}],
    }
    post(server, path, {"events": [answer]})
    settled(live, seen)
    post(server, path, {"events": [message("/say partial\n/fail server_error")]})
    settled(live, seen)
    post(server, path, {"events": [message("/say waiting\n/hang")]})
    live.until("agent.session.turn.item.done", seen)
    post(server, path, {"events": [{"type": "agent.session.input.cancel"}]})
    settled(live, seen)
    live.close()
    return seen


def normalised(lines: list[str]) -> str:
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        token = match.group(0)
        if token not in names:
            names[token] = f"{match.group(1)}_#{len(names) + 1}"
        return names[token]

    out = []
    for line in lines:
        line = ID.sub(name, line)
        line = DIGEST.sub(name, line)
        line = TIME.sub(r"\1<time>", line)
        line = OBFUSCATION.sub('"obfuscation":"<padding>"', line)
        out.append(CONFINEMENT.sub('"confinement":"<host>"', line))
    return "\n".join(out) + "\n"


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path / "data")
    yield running
    running.stop()


def test_every_event_keeps_its_wire_bytes(own_server: Server) -> None:
    got = normalised(varied_session(own_server))
    if os.environ.get("COREBOX_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")
