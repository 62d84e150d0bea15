"""`corebox agents ...` and `corebox overlays ...` against the shared server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from openai import OpenAI

from allinone import cli
from tests.api.support import Surface, surface
from tests.api.test_overlays import running
from tests.conftest import API_KEY

__all__ = ["surface"]


def corebox(surface: Surface, *argv: str) -> int:
    where = ["--data-dir", str(surface.server.data_dir), "--url", surface.server.base_url]
    return cli.main([*argv[:2], *where, *argv[2:]])


def test_agents_versions_promote_and_rollback(
    surface: Surface, client: OpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = client.beta.agents.create(model="scripted", instructions="one")
    client.beta.agents.update(agent.id, instructions="two")
    key = ["--api-key", API_KEY]
    assert corebox(surface, "agents", "versions", agent.id, *key) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["1", "2"]
    listed = client.get(
        f"{surface.server.base_url}/x/v1/agents/{agent.id}/versions?order=asc", cast_to=object
    )
    first = listed["data"][0]  # type: ignore[index]
    number, digest, made = lines[0].split("\t")  # made: a UTC time a person reads
    when = datetime.strptime(made, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert (number, digest, when.timestamp()) == ("1", first["config_digest"], first["created_at"])
    assert corebox(surface, "agents", "promote", agent.id, "production", "2", *key) == 0
    assert capsys.readouterr().out.strip() == "production\t2\tpointer 1"
    stale = ("agents", "promote", agent.id, "production", "1", "--expected", "0", *key)
    assert corebox(surface, *stale) == 1
    assert "HTTP 409" in capsys.readouterr().err
    assert corebox(surface, "agents", "rollback", agent.id, "latest", "--version", "1", *key) == 0
    assert capsys.readouterr().out.strip() == "latest\t1\tpointer 3"
    assert corebox(surface, "agents", "deployments", agent.id, *key) == 0
    assert capsys.readouterr().out.splitlines() == [
        "latest\t1\tpointer 3",
        "production\t2\tpointer 1",
    ]


def test_overlays_set_show_and_clear(surface: Surface, capsys: pytest.CaptureFixture[str]) -> None:
    project_id, _ = surface.project()
    args = ("overlays", "set", "tool_disabled", "run_command", "--project", project_id)
    assert corebox(surface, *args, "--reason", "incident 7") == 0
    overlay_id = capsys.readouterr().out.split("\t")[0]
    assert corebox(surface, "overlays", "show") == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith(overlay_id)]
    assert len(shown) == 1 and "active\ttool_disabled=run_command" in shown[0]
    assert corebox(surface, "overlays", "clear", overlay_id, "--resume") == 1
    assert "resume applies only to a pause kill switch" in capsys.readouterr().err
    assert corebox(surface, "overlays", "clear", overlay_id) == 0
    assert "\tcleared\t" in capsys.readouterr().out
    assert corebox(surface, "overlays", "clear", overlay_id) == 1


def test_overlays_clear_resume_lists_the_turns_it_resumes(
    surface: Surface, capsys: pytest.CaptureFixture[str]
) -> None:
    project_id, key = surface.project()
    session = running(surface.client(key), "/say a\n/sleep 1500\n/say b")
    args = ("overlays", "set", "kill_switch", "pause", "--project", project_id)
    assert corebox(surface, *args, "--reason", "incident 8") == 0
    overlay_id = capsys.readouterr().out.split("\t")[0]
    assert corebox(surface, "overlays", "clear", overlay_id, "--resume") == 0
    shown = capsys.readouterr().out.splitlines()
    assert "\tcleared\tkill_switch=pause\t" in shown[0]
    [resumed] = shown[1:]
    assert resumed.startswith("  resume cmd_") and resumed.endswith(f"\tsession {session.id}")


def test_agents_versions_lists_every_version_past_one_page(
    surface: Surface, client: OpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = client.beta.agents.create(model="scripted", instructions="v1")
    for n in range(2, 103):  # one more than a page of 100, and one more again
        client.beta.agents.update(agent.id, instructions=f"v{n}")
    assert corebox(surface, "agents", "versions", agent.id, "--api-key", API_KEY) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == list(range(1, 103))
