"""`builtin` and skills: the environment's skills are named in the model's instructions
and their files are readable with the workspace tools (real `corebox serve`, loopback
model server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.api.test_builtin import create, latest_turn
from tests.api.test_skills import MANIFEST, skill_zip
from tests.support.model_server import ModelServer, Reply


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def test_builtin_lists_installed_skills_and_reads_them(client: OpenAI, model: ModelServer) -> None:
    skill = client.skills.create(files=("s.zip", skill_zip(), "application/zip"))
    model.queue(
        Reply.call("read_file", {"path": ".skills/csv-report/SKILL.md"}),
        Reply.say("I know how to make the report."),
    )
    session_id, _ = create(
        client,
        model,
        "make a report",
        agent={"instructions": "Be helpful."},
        environment={
            "type": "openai_hosted",
            "skills": [{"type": "skill_reference", "skill_id": skill.id}],
        },
    )
    assert latest_turn(client, session_id).status == "completed"
    system = model.requests[0].body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be helpful.\n\n")
    assert (
        "- csv-report (.skills/csv-report/SKILL.md): Turn a CSV into a short report."
        in system["content"]
    )
    assert model.requests[1].body["messages"][-1]["content"] == MANIFEST.decode()
