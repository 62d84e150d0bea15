"""Upload a skill, give it to a managed workspace, and delegate to a subagent, with the
official SDK against a local corebox (the scripted harness: no model needed).

make run        # in one terminal; the examples find its key (see connection.py)
.venv/bin/python examples/skills_and_subagents.py
"""

from __future__ import annotations

import sys

import connection

MANIFEST = b"""---
name: greeting
description: How to greet a visitor politely.
---
Say hello, then the visitor's name.
"""


def main() -> int:
    client = connection.client()
    if client is None:
        return 2
    skill = client.skills.create(files=[("greeting/SKILL.md", MANIFEST, "text/markdown")])
    print(f"skill {skill.name} version {skill.default_version}")
    try:
        with client.beta.agents.sessions.create(
            agent={"model": "scripted", "multi_agent": {"enabled": True}},
            environment={
                "type": "openai_hosted",
                "skills": [{"type": "skill_reference", "skill_id": skill.id}],
            },
            # The skill is installed at /workspace/.skills/greeting/; a subagent is
            # given the skill's first instruction line as its task.
            input="/read .skills/greeting/SKILL.md\n/subagent Say hello, then the name.\n"
            "/say The subagent answered: {subagent}",
            stream=True,
        ) as stream:
            session_id = ""
            for event in stream:
                if event.type == "agent.session.created":
                    session_id = event.session.id
                elif event.type == "agent.session.turn.output_text.delta":
                    print(event.delta, end="", flush=True)
        print()
        for subagent in client.beta.agents.sessions.subagents.list(session_id, order="asc"):
            turns = client.beta.agents.sessions.subagents.turns.list(
                subagent.id, session_id=session_id
            )
            print(f"{subagent.name}: {subagent.status}, {len(turns.data)} turn(s)")
    finally:
        client.skills.delete(skill.id)
    return 0


if __name__ == "__main__":
    sys.exit(connection.run(main))
