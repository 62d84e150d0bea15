"""The Skills API (`client.skills`) and `skills` on environments, through the official
SDK with strict response validation."""

from __future__ import annotations

import base64
import io
import socket
import zipfile
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone import cli
from tests.api.support import Surface

MANIFEST = b"---\nname: csv-report\ndescription: Turn a CSV into a short report.\n---\n# Use\n"


def skill_zip(name: str = "csv-report", top: str = "", extra: str = "") -> bytes:
    out = io.BytesIO()
    manifest = MANIFEST.replace(b"csv-report", name.encode()) + extra.encode()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(top + "SKILL.md", manifest)
        archive.writestr(top + "scripts/report.py", "print('report')\n")
    return out.getvalue()


def files_of(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_skill_is_created_versioned_read_and_deleted(client: OpenAI) -> None:
    skill = client.skills.create(
        files=[
            ("csv-report/SKILL.md", MANIFEST, "text/markdown"),
            ("csv-report/scripts/report.py", b"print('report')\n"),
        ]
    )
    assert (skill.object, skill.name, skill.description) == (
        "skill",
        "csv-report",
        "Turn a CSV into a short report.",
    )
    assert (skill.default_version, skill.latest_version) == ("1", "1")
    assert client.skills.retrieve(skill.id).model_dump() == skill.model_dump()
    content = client.skills.content.retrieve(skill.id).read()
    assert files_of(content) == {"SKILL.md": MANIFEST, "scripts/report.py": b"print('report')\n"}

    second = client.skills.versions.create(
        skill.id, files=("bundle.zip", skill_zip(top="x/", extra="v2\n"), "application/zip")
    )
    assert (second.object, second.skill_id, second.version) == ("skill.version", skill.id, "2")
    again = client.skills.retrieve(skill.id)
    assert (again.default_version, again.latest_version) == ("1", "2")
    assert files_of(client.skills.versions.content.retrieve("2", skill_id=skill.id).read())[
        "SKILL.md"
    ].endswith(b"v2\n")
    versions = client.skills.versions.list(skill.id, order="asc")
    assert [v.version for v in versions.data] == ["1", "2"]
    assert client.skills.versions.retrieve("2", skill_id=skill.id).id == second.id
    # A version is written in ASCII digits; other digits, or too many, name no version.
    for missing in ("\u00b2", "9" * 4400, "0"):
        with pytest.raises(openai.NotFoundError):
            client.skills.versions.retrieve(missing, skill_id=skill.id)
    with pytest.raises(openai.BadRequestError) as bad:
        client.skills.update(skill.id, default_version="\u0662")
    assert bad.value.body["param"] == "default_version"  # type: ignore[index]

    moved = client.skills.update(skill.id, default_version="2")
    assert moved.default_version == "2"
    with pytest.raises(openai.BadRequestError):
        client.skills.versions.delete("2", skill_id=skill.id)  # the default version
    deleted = client.skills.versions.delete("1", skill_id=skill.id)
    assert (deleted.object, deleted.deleted, deleted.version) == (
        "skill.version.deleted",
        True,
        "1",
    )
    with pytest.raises(openai.NotFoundError):
        client.skills.versions.retrieve("1", skill_id=skill.id)
    third = client.skills.versions.create(skill.id, files=[("SKILL.md", MANIFEST)], default=True)
    assert third.version == "3"  # numbers are never reused
    assert client.skills.retrieve(skill.id).default_version == "3"

    gone = client.skills.delete(skill.id)
    assert (gone.id, gone.object, gone.deleted) == (skill.id, "skill.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.skills.retrieve(skill.id)
    with pytest.raises(openai.NotFoundError):
        client.skills.content.retrieve(skill.id)


def test_skills_list_pages(surface: Surface) -> None:
    client = surface.new_client("skills-pages")
    made = [
        client.skills.create(files=("s.zip", skill_zip(f"skill-{n}"), "application/zip")).id
        for n in range(3)
    ]
    first = client.skills.list(limit=2, order="asc")
    assert [s.id for s in first.data] == made[:2] and first.has_more
    rest = client.skills.list(limit=2, order="asc", after=first.data[-1].id)
    assert [s.id for s in rest.data] == made[2:] and not rest.has_more
    assert [s.id for s in client.skills.list(order="asc", limit=1)] == made
    with pytest.raises(openai.BadRequestError):
        client.skills.list(limit=101)


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ([("README.md", b"no manifest")], "SKILL.md"),
        ([("SKILL.md", b"# no front matter\n")], "front matter"),
        ([("SKILL.md", b"---\nname: Bad Name\ndescription: d\n---\n")], "name"),
        ([("SKILL.md", b"---\nname: ok\n---\n")], "description"),
        ([("SKILL.md", MANIFEST), ("../escape.txt", b"x")], "clean relative path"),
        (("broken.zip", b"PK\x03\x04 not really"), "zip"),
    ],
)
def test_a_bad_bundle_is_refused(client: OpenAI, files: Any, why: str) -> None:
    before = [s.id for s in client.skills.list(limit=100)]
    with pytest.raises(openai.BadRequestError) as caught:
        client.skills.create(files=files)
    assert why in caught.value.message
    assert [s.id for s in client.skills.list(limit=100)] == before


def test_a_skill_reference_is_installed_in_the_sessions_workspace(client: OpenAI) -> None:
    skill = client.skills.create(files=("s.zip", skill_zip(), "application/zip"))
    inline = base64.b64encode(skill_zip("notes")).decode()
    environment = client.beta.agents.environments.create(
        environment={
            "type": "openai_hosted",
            "skills": [
                {"type": "skill_reference", "skill_id": skill.id},
                {
                    "type": "inline",
                    "name": "notes",
                    "description": "Keep notes.",
                    "source": {"type": "base64", "media_type": "application/zip", "data": inline},
                },
            ],
        }
    )
    assert [s.model_dump() for s in environment.skills] == [
        {
            "type": "skill_reference",
            "skill_id": skill.id,
            "name": "csv-report",
            "description": "Turn a CSV into a short report.",
            "version": "1",
        },
        {"type": "inline", "name": "notes", "description": "Keep notes."},
    ]
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "openai_hosted", "environment_id": environment.id},
        input=(
            "/read .skills/csv-report/scripts/report.py\n/read .skills/notes/SKILL.md\n/say {read}"
        ),
        stream=True,
    )
    events = list(session)
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    text = "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")
    assert text.startswith("---\nname: notes\n")
    shown = client.beta.agents.sessions.retrieve(events[0].session.id).environment
    assert shown.type == "openai_hosted"
    assert [s.name for s in shown.skills] == ["csv-report", "notes"]


def test_environment_skills_are_checked(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.environments.create(
            environment={
                "type": "openai_hosted",
                "skills": [{"type": "skill_reference", "skill_id": "skill_missing"}],
            }
        )
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.environments.create(
            environment={
                "type": "openai_hosted",
                "skills": [
                    {
                        "type": "inline",
                        "name": "other",
                        "description": "d",
                        "source": {
                            "type": "base64",
                            "media_type": "application/zip",
                            "data": base64.b64encode(skill_zip("notes")).decode(),
                        },
                    }
                ],
            }
        )
    assert caught.value.body["param"] == "environment.skills[0].name"  # type: ignore[index]


def test_an_automation_resolves_its_skill_when_it_starts_a_session(client: OpenAI) -> None:
    skill = client.skills.create(files=("s.zip", skill_zip("digest"), "application/zip"))
    automation = client.beta.agents.automations.create(
        type="periodic",
        name="skills",
        expression="0 0 1 1 *",
        timezone="UTC",
        target={
            "type": "new_session",
            "agent": {"model": "scripted"},
            "environment": {
                "type": "openai_hosted",
                "skills": [{"type": "skill_reference", "skill_id": skill.id, "version": "latest"}],
            },
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hello"}]}],
        },
    )
    target = automation.target
    assert target.type == "new_session" and target.environment.type == "openai_hosted"
    assert [s.model_dump() for s in target.environment.skills or []] == [
        {"type": "skill_reference", "skill_id": skill.id, "version": "latest"}
    ]
    client.skills.versions.create(
        skill.id, files=[("SKILL.md", MANIFEST.replace(b"csv-report", b"digest") + b"v2\n")]
    )
    invocation = client.beta.agents.automations.invocations.create(automation.id)
    assert invocation.status == "completed" and invocation.session_id is not None
    environment = client.beta.agents.sessions.retrieve(invocation.session_id).environment
    assert environment.type == "openai_hosted"
    assert [(s.name, s.version) for s in environment.skills] == [("digest", "2")]  # type: ignore[union-attr]


def test_the_skills_command(surface: Surface, tmp_path: Path, capsys: Any) -> None:
    _, key = surface.project("skills-cli")
    key_file = tmp_path / "key"
    key_file.write_text(key)
    folder = tmp_path / "csv-report"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_bytes(MANIFEST)
    (folder / "scripts" / "report.py").write_text("print('report')\n")
    common = ["--url", surface.server.base_url, "--api-key-file", str(key_file)]

    assert cli.main(["skills", "create", str(folder), *common]) == 0
    skill_id, name = capsys.readouterr().out.split()[:2]
    assert name == "csv-report"
    archive = tmp_path / "v2.zip"
    archive.write_bytes(skill_zip(extra="v2\n"))
    assert cli.main(["skills", "version", skill_id, str(archive), "--default", *common]) == 0
    assert capsys.readouterr().out.startswith(f"{skill_id}  version 2  csv-report")
    assert cli.main(["skills", "list", *common]) == 0
    assert f"{skill_id}  csv-report  default 2  latest 2" in capsys.readouterr().out
    assert cli.main(["skills", "default", skill_id, "9", *common]) == 1
    assert capsys.readouterr().err == (
        "corebox: error: the server refused: Resource not found. (HTTP 404)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["skills", "version", skill_id, str(empty), *common]) == 1
    assert capsys.readouterr().err == (
        f"corebox: error: {empty} holds no files: a skill is a folder with a SKILL.md\n"
    )
    assert cli.main(["skills", "delete", skill_id, *common]) == 0
    assert capsys.readouterr().out.strip() == f"{skill_id}  deleted"
    client = surface.client(key)
    assert list(client.skills.list()) == []


def test_the_skills_command_finds_the_key_as_the_other_commands_do(
    surface: Surface, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COREBOX_API_KEY, else the banner's `export` line for this server, else the
    default project's key file in `--data-dir` (`run_control.project_key`)."""
    _, key = surface.project("skills-cli-keys")
    url = surface.server.base_url
    listing = ["skills", "list", "--url", url, "--data-dir", str(tmp_path)]
    for name in ("COREBOX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(listing) == 1
    assert "no project API key" in capsys.readouterr().err
    (tmp_path / "default-project.key").write_text(key + "\n")
    assert cli.main(listing) == 0
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "cbx-wrong")
    assert cli.main(listing) == 1
    assert capsys.readouterr().err.endswith("(HTTP 401)\n")
    monkeypatch.setenv("COREBOX_API_KEY", key)
    assert cli.main(listing) == 0
    assert capsys.readouterr().err == ""


def test_the_skills_command_says_when_nothing_answers(tmp_path: Path, capsys: Any) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("cbx-any\n")
    # A port that is bound but not listening: nothing answers there while it is held.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        assert cli.main(["skills", "list", "--url", url, "--api-key-file", str(key_file)]) == 1
    assert capsys.readouterr().err == (
        f"corebox: error: cannot reach corebox at {url} (connection refused); is `corebox"
        " serve` running there? Give another address with --url (or COREBOX_URL)\n"
    )


def test_an_automation_checks_an_inline_skill_when_it_is_made(client: OpenAI) -> None:
    bad = base64.b64encode(skill_zip("notes")).decode()
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.automations.create(
            type="periodic",
            name="inline",
            expression="0 0 1 1 *",
            timezone="UTC",
            target={
                "type": "new_session",
                "agent": {"model": "scripted"},
                "environment": {
                    "type": "openai_hosted",
                    "skills": [
                        {
                            "type": "inline",
                            "name": "other",
                            "description": "d",
                            "source": {
                                "type": "base64",
                                "media_type": "application/zip",
                                "data": bad,
                            },
                        }
                    ],
                },
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            },
        )
    assert "SKILL.md" in caught.value.message


def test_a_skill_belongs_to_its_project(client: OpenAI, surface: Surface) -> None:
    skill = client.skills.create(files=("s.zip", skill_zip("private"), "application/zip"))
    other = surface.new_client("skills-other")
    with pytest.raises(openai.NotFoundError):
        other.skills.retrieve(skill.id)
    with pytest.raises(openai.NotFoundError):
        other.skills.content.retrieve(skill.id)
    with pytest.raises(openai.NotFoundError):
        other.skills.delete(skill.id)
    with pytest.raises(openai.NotFoundError):
        other.beta.agents.environments.create(
            environment={
                "type": "openai_hosted",
                "skills": [{"type": "skill_reference", "skill_id": skill.id}],
            }
        )
    assert skill.id not in [s.id for s in other.skills.list()]
    assert client.skills.retrieve(skill.id).id == skill.id
