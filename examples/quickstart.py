"""Run one turn against a local corebox with the official SDK.

make run                                   # in one terminal (prints the API key once)
COREBOX_API_KEY=<key> python examples/quickstart.py
"""

from __future__ import annotations

import os
import sys

from openai import OpenAI


def main() -> int:
    base_url = os.environ.get("COREBOX_BASE_URL", "http://127.0.0.1:8800/v1")
    key = os.environ.get("COREBOX_API_KEY")
    if not key:
        print("set COREBOX_API_KEY to the key corebox printed at first start", file=sys.stderr)
        return 2
    client = OpenAI(base_url=base_url, api_key=key)
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
    sys.exit(main())
