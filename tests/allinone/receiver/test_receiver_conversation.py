"""Acceptance: two roles on one `corebox serve`, each with a receiver. A contact opened
by one is received, claimed and answered by the other's agent handler (a saved corebox
Agent on the scripted harness), and the reply arrives; six replies exhaust the limit,
the seventh gets REPLY_LIMIT_REACHED, and accepting the contact raises it."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from openai import OpenAI

from tests.allinone.comms.comms_helpers import Inst, Owner
from tests.allinone.receiver.receiver_helpers import (
    make_side,
    messages_from_peer,
    once,
    resolve,
    status,
    write_private,
)
from tests.conftest import API_KEY, Server


def ack(text: str) -> str:
    """The scripted agent's offline reply to a message."""
    return f'Received: "{text}" ({len(text)} characters).'


def _agent_side_handler(server: Server, agent_id: str, directory: Path) -> dict[str, object]:
    key_file = write_private(directory.parent / f"{directory.name}-project.key", API_KEY)
    return {
        "command": sys.executable,
        "args": [
            "-m",
            "allinone",
            "handler",
            "agent",
            "--agent-id",
            agent_id,
            "--base-url",
            f"{server.base_url}/v1",
            "--api-key-file",
            str(key_file),
        ],
        "cwd": str(directory / "work"),
        "timeout_ms": 60_000,
    }


def test_an_agent_answers_its_mail_until_the_limit_and_accepting_raises_it(
    server: Server, tmp_path: Path
) -> None:
    with OpenAI(base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=0) as sdk:
        agent_id = sdk.beta.agents.create(model="scripted").id
    owner = Owner(server.base_url)
    sides = {}
    for name, agent in (("alice", None), ("bob", agent_id)):
        role = owner.role(name, agent_id=agent)
        view, token = owner.instance(role["id"], f"{name}-laptop")
        sides[name] = Inst(server.base_url, token, role["id"], view["id"])
    alice, bob = sides["alice"], sides["bob"]
    a_side = make_side(server, alice, tmp_path / "alice")
    b_side = make_side(
        server,
        bob,
        tmp_path / "bob",
        handler=_agent_side_handler(server, agent_id, tmp_path / "bob"),
        owner_instruction="Answer pings briefly.",
    )

    contact = alice.open(bob.role_id, "ping 1").body["contact_id"]
    assert once(b_side)["settled"] == 1
    received = once(a_side)
    assert received["received"] >= 1 and received["receipted"] >= 1
    assert messages_from_peer(alice, contact) == [ack("ping 1")]
    assert bob.communication(contact)["latest_outbound_received_at"] is not None
    assert alice.communication(contact)["peer_phase"] == "waiting_reply"

    for n in (2, 4, 6):  # alice writes by hand; bob's agent answers the first two
        assert alice.reply(contact, f"ping {n}").status == 200
        if n < 6:
            assert once(b_side)["settled"] == 1
            once(a_side)
    assert messages_from_peer(alice, contact) == [ack("ping 1"), ack("ping 2"), ack("ping 4")]
    view = alice.communication(contact)
    assert (view["replies_used"], view["replies_remaining"]) == (6, 0)
    seventh = alice.reply(contact, "one more")
    assert seventh.status == 409 and seventh.code == "REPLY_LIMIT_REACHED"

    # Bob's agent acknowledges "ping 6", which would be the seventh reply: the job waits for
    # the owner with the platform's code instead of being retried.
    once(b_side)
    attention = status(b_side)["local"]["attention"]
    assert [(a["state"], a["code"]) for a in attention] == [
        ("waiting_owner", "REPLY_LIMIT_REACHED")
    ]
    assert alice.communication(contact)["peer_phase"] == "waiting_owner"

    # The owner accepts the contact through a resolution; the agent is not asked again.
    done = resolve(
        b_side,
        {
            "owner_confirmed": True,
            "job_id": attention[0]["job_id"],
            "result": {
                "schema_version": 1,
                "action": "reply",
                "message": "pong 6",
                "accept_contact": True,
                "owner_summary": "accepted",
            },
            "notification_delivered": True,
        },
    )
    assert done.returncode == 0, done.stderr
    once(b_side)
    once(a_side)
    assert messages_from_peer(alice, contact) == [
        ack("ping 1"),
        ack("ping 2"),
        ack("ping 4"),
        "pong 6",
    ]
    view = alice.communication(contact)
    assert view["accepted"] is True and view["reply_limit"] == 60
    assert view["replies_used"] == 7
    assert alice.reply(contact, "thanks").status == 200

    # One session for the contact, one agent turn per handled job (4), none for resolve.
    conn = sqlite3.connect(b_side.directory / "work" / "agent-handler.db")
    sessions = [row[0] for row in conn.execute("SELECT session_id FROM sessions")]
    conn.close()
    assert len(sessions) == 1
    with OpenAI(base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=0) as sdk:
        turns = sdk.beta.agents.sessions.turns.list(sessions[0], limit=100).data
    assert len(turns) == 4
    assert status(b_side)["local"]["attention"] == []
