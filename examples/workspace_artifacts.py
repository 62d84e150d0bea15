"""A session that works in a directory of yours and leaves an artifact.

COREBOX_API_KEY=<key> python examples/workspace_artifacts.py /path/to/an/empty/dir
"""

from __future__ import annotations

import os
import sys

from openai import OpenAI


def main() -> int:
    key = os.environ.get("COREBOX_API_KEY")
    if not key or len(sys.argv) != 2:
        print("usage: COREBOX_API_KEY=<key> workspace_artifacts.py DIRECTORY", file=sys.stderr)
        return 2
    directory = os.path.abspath(sys.argv[1])
    client = OpenAI(
        base_url=os.environ.get("COREBOX_BASE_URL", "http://127.0.0.1:8800/v1"), api_key=key
    )
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": directory},
            input="/write outputs/report.txt All systems nominal.\n/say Report written.",
            stream=True,
        )
    )
    session_id = events[0].session.id  # type: ignore[attr-defined]
    for artifact in client.beta.agents.sessions.artifacts.list(session_id):
        body = client.beta.agents.sessions.artifacts.content(artifact.id, session_id=session_id)
        print(f"{artifact.path} ({artifact.size_bytes} bytes): {body.read().decode()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
