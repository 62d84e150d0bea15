"""A session that works in a directory of yours and leaves an artifact.

.venv/bin/python examples/workspace_artifacts.py ~/corebox-demo

The directory (made if missing) must lie under a workspace root: by default your home
directory (`--workspace-root DIR` on `corebox serve` adds others).
"""

from __future__ import annotations

import os
import sys

import connection


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: workspace_artifacts.py DIRECTORY", file=sys.stderr)
        return 2
    client = connection.client()
    if client is None:
        return 2
    directory = os.path.abspath(sys.argv[1])
    os.makedirs(directory, exist_ok=True)
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": directory},
            input="/write outputs/report.txt All systems nominal.\n/say Report written.",
            stream=True,
        )
    )
    session_id = events[0].session.id  # type: ignore[attr-defined]
    for event in events:
        if event.type == "agent.session.turn.failed":
            print(f"the turn failed: {event.turn.error.message}", file=sys.stderr)  # type: ignore[union-attr]
            return 1
    for artifact in client.beta.agents.sessions.artifacts.list(session_id):
        body = client.beta.agents.sessions.artifacts.content(artifact.id, session_id=session_id)
        print(f"{artifact.path} ({artifact.size_bytes} bytes): {body.read().decode()}")
    return 0


if __name__ == "__main__":
    sys.exit(connection.run(main))
