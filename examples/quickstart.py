"""Run one turn against a local corebox with the official SDK.

make run        # in one terminal; the examples find its key (see connection.py)
.venv/bin/python examples/quickstart.py
"""

from __future__ import annotations

import sys

import connection


def main() -> int:
    client = connection.client()
    if client is None:
        return 2
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "none"},
        input="/think planning a greeting\n/say Hello from corebox!",
        stream=True,
    )
    session_id = ""
    for event in stream:
        if event.type == "agent.session.created":
            session_id = event.session.id
        elif event.type == "agent.session.turn.output_text.delta":
            print(event.delta, end="", flush=True)
    print()
    with client.beta.agents.sessions.stream(session_id, input="and again") as follow_up:
        print(follow_up.get_final_result().output_text)
    return 0


if __name__ == "__main__":
    sys.exit(connection.run(main))
