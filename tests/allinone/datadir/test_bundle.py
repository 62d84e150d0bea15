"""`corebox export` from one server and `corebox import` into a fresh one: agents, items,
turn statuses, artifact bytes, uploaded files (ids, descriptions, bodies) and the
project's environments are equal; a vault secret or set-up command appears nowhere in
the bundle; a second import adds nothing; exporting the imported data gives the same
bytes apart from the header time; an imported session takes a new turn."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.datadir.test_gc import corebox, hosted_session, managed_session
from tests.conftest import API_KEY, Server, start_server

SECRET = "vault-secret-" + "7f3a9c" * 4
# Uploaded files: one body in the blob store, one in the database, carried twice.
FILES = (
    ("big.bin", os.urandom(80_000)),
    ("notes.txt", b"small notes"),
    ("copy.txt", b"small notes"),
)
# Environments made with environments.create, used by no session: the project's own.
SETUP = "echo " + "set-up-3e8d1b" * 2
PROJECT_ENVIRONMENTS = (
    {"type": "openai_hosted"},
    {"type": "openai_hosted", "setup_commands": [{"command": SETUP}]},
    {"type": "openai_hosted", "env": {"TOKEN": SECRET}, "setup_commands": [{"command": "true"}]},
)


def _picture(client: OpenAI) -> dict[str, Any]:
    """What must survive the trip, read through the public API."""
    agents = sorted((a.id, a.model, a.name) for a in client.beta.agents.list(limit=100))
    sessions: dict[str, Any] = {}
    for session in client.beta.agents.sessions.list(limit=100):
        items = client.beta.agents.sessions.items.list(session.id, limit=100, order="asc").data
        turns = client.beta.agents.sessions.turns.list(session.id, limit=100).data
        digests = []
        for artifact in client.beta.agents.sessions.artifacts.list(session.id).data:
            body = client.beta.agents.sessions.artifacts.content(artifact.id, session_id=session.id)
            digests.append((artifact.path, hashlib.sha256(body.read()).hexdigest()))
        sessions[session.id] = {
            "items": [item.model_dump() for item in items],
            "turns": sorted((t.id, t.status) for t in turns),
            "artifacts": sorted(digests),
            "usage": client.beta.agents.sessions.retrieve(session.id).usage,
        }
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    versions = {
        agent_id: [
            (v["version"], v["config_digest"])
            for v in client.get(f"{root}/x/v1/agents/{agent_id}/versions", cast_to=object)["data"]  # type: ignore[index]
        ]
        for agent_id, _, _ in agents
    }
    deployments = {
        agent_id: client.get(f"{root}/x/v1/agents/{agent_id}/deployments", cast_to=object)
        for agent_id, _, _ in agents
    }
    templates = [
        t.model_dump(exclude={"created_at", "updated_at"})
        for t in client.beta.agents.environments.templates.list(order="asc")
    ]
    automations = [
        a.model_dump(exclude={"created_at", "updated_at", "next_run_at"})
        for a in client.beta.agents.automations.list(order="asc")
    ]
    files = [
        (f.model_dump(), hashlib.sha256(client.files.content(f.id).read()).hexdigest())
        for f in client.files.list(order="asc")
    ]
    # An environment's initial files are sealed inputs, listed in needs_reentry.
    environments = [
        e.model_dump(exclude={"files"}) for e in client.beta.agents.environments.list(limit=100)
    ]
    return {
        "agents": agents,
        "versions": versions,
        "deployments": deployments,
        "sessions": sessions,
        "templates": templates,
        "automations": automations,
        "files": files,
        "environments": environments,
    }


def _source(client: OpenAI) -> list[str]:
    """Fill the project; return the ids of the environments it made itself."""
    environments = []
    for spec in PROJECT_ENVIRONMENTS:  # one at a time: the Runtime prepares a few at once
        made = client.beta.agents.environments.create(environment=spec)  # type: ignore[arg-type]
        client.beta.agents.environments.files.list(made.id)  # initialized by now
        environments.append(made.id)
    agent = client.beta.agents.create(model="scripted", name="carried")
    client.beta.agents.update(agent.id, name="carried, version 2")
    vault = client.beta.agents.vaults.create(name="v")
    client.beta.agents.vaults.credentials.create(
        vault.id,
        name="cred",
        auth={  # type: ignore[arg-type]
            "type": "environment_variable",
            "secret_name": "KEY",
            "secret_value": SECRET,
            "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]},
        },
    )
    list(
        client.beta.agents.sessions.create(
            agent_id=agent.id,
            environment={"type": "none"},
            vault_ids=[vault.id],
            input="/say first\n/fail server_error",
            stream=True,
        )
    )
    managed_session(client, os.urandom(100_000))  # a body in the blob store
    managed_session(client, b"small")  # a body in the database
    for name, body in FILES:
        client.files.create(file=(name, io.BytesIO(body)), purpose="user_data")
    client.beta.agents.environments.templates.create(
        name="web", env={"API_TOKEN": SECRET}, packages={"python": ["httpx"]}
    )
    client.beta.agents.automations.create(
        type="periodic",
        name="daily",
        expression="30 7 * * 1-5",
        timezone="Europe/Paris",
        target={  # type: ignore[arg-type]
            "type": "new_session",
            "agent": {"model": "scripted"},
            "environment": {"type": "none"},
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        },
    )
    return environments


def test_a_bundle_carries_a_project_to_a_fresh_server(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
    first = start_server(tmp_path / "a" / "data")
    try:
        with OpenAI(base_url=first.base_url + "/v1", api_key=API_KEY, max_retries=0) as source:
            made_by_project = _source(source)
            expected = _picture(source)
        bundle = tmp_path / "project.bundle"
        made = corebox(first.data_dir, "export", "-o", str(bundle))
        assert made.returncode == 0, made.stderr
    finally:
        first.stop()
    raw = bundle.read_bytes()
    assert SECRET.encode() not in raw and SETUP.encode() not in raw
    document = json.loads(raw)
    assert any("vault" in entry["what"] for entry in document["needs_reentry"])
    owners = {e["id"]: e["owner"] for e in document["environments"]}
    assert {i: owners.get(i) for i in made_by_project} == dict.fromkeys(made_by_project, "project")
    assert sorted(owners.values()).count("session") == 2  # the managed sessions' own
    reentry = {e["id"] for e in document["needs_reentry"] if e["kind"] == "environment"}
    assert reentry == set(owners)
    assert document["header"]["version"] == 3
    assert sorted(f["filename"] for f in document["files"]) == sorted(n for n, _ in FILES)
    assert len(document["file_bodies"]) == 2  # each body once
    assert [t["name"] for t in document["environment_templates"]] == ["web"]
    assert [a["name"] for a in document["automations"]] == ["daily"]
    sealed_apart = {e["kind"] for e in document["needs_reentry"]}
    assert {"environment_template", "automation"} <= sealed_apart

    second = start_server(tmp_path / "b" / "data")
    try:
        _check_import(second, tmp_path, bundle, raw, expected)
    finally:
        second.stop()


def _check_import(
    second: Server, tmp_path: Path, bundle: Path, raw: bytes, expected: dict[str, Any]
) -> None:
    _import_an_earlier_bundle(second.data_dir, tmp_path, raw)
    once = corebox(second.data_dir, "import", str(bundle))
    assert once.returncode == 0, once.stderr
    added = len(PROJECT_ENVIRONMENTS)  # the project's environments, and nothing else
    assert once.stdout.endswith(f": {added} rows added\n"), once.stdout
    twice = corebox(second.data_dir, "import", str(bundle))
    assert twice.returncode == 0 and " 0 rows added" in twice.stdout, twice.stdout
    assert "(every row in it is already on this server)" in twice.stdout, twice.stdout
    # Bundles of the first format (no templates, no automations) and the second (no
    # files) still import.
    second_format = json.loads(raw)
    second_format["header"]["version"] = 2
    del second_format["files"], second_format["file_bodies"]
    first_format = json.loads(json.dumps(second_format))
    first_format["header"]["version"] = 1
    del first_format["environment_templates"], first_format["automations"]
    for number, older_format in ((1, first_format), (2, second_format)):
        older = tmp_path / f"v{number}.bundle"
        older.write_text(json.dumps(older_format))
        thrice = corebox(second.data_dir, "import", str(older))
        assert thrice.returncode == 0 and " 0 rows added" in thrice.stdout, thrice.stdout
    empty = tmp_path / "empty.bundle"
    empty.write_text(json.dumps({"header": {"format": "corebox-bundle", "version": 3}}))
    nothing = corebox(second.data_dir, "import", str(empty))
    assert nothing.returncode == 0, nothing.stderr
    assert "0 rows added (the bundle holds no rows)" in nothing.stdout, nothing.stdout
    with OpenAI(base_url=second.base_url + "/v1", api_key=API_KEY, max_retries=0) as target:
        assert _picture(target) == expected

    again = tmp_path / "again.bundle"
    assert corebox(second.data_dir, "export", "-o", str(again)).returncode == 0
    header_time = re.compile(rb'^\{"agents":(.*)"header":\{"created_at":\d+,')
    assert header_time.match(raw) is not None
    assert header_time.sub(rb"\1", raw) == header_time.sub(rb"\1", again.read_bytes())
    with OpenAI(base_url=second.base_url + "/v1", api_key=API_KEY, max_retries=0) as target:
        _new_turn(target, next(iter(expected["sessions"])))
        _imported_automation_names_its_missing_target(target)


def _import_an_earlier_bundle(data_dir: Path, tmp_path: Path, raw: bytes) -> None:
    """A bundle written before whole-project exports carried the project's environments
    (only those its sessions use, and before migration 36 without their owner) imports
    them, as the session's own."""
    earlier = json.loads(raw)
    earlier["environments"] = [
        {k: v for k, v in e.items() if k != "owner"}
        for e in earlier["environments"]
        if e["owner"] == "session"
    ]
    path = tmp_path / "earlier.bundle"
    path.write_text(json.dumps(earlier))
    imported = corebox(data_dir, "import", str(path))
    assert imported.returncode == 0 and " rows added" in imported.stdout, imported.stderr
    assert " 0 rows added" not in imported.stdout, imported.stdout


def _imported_automation_names_its_missing_target(target: OpenAI) -> None:
    (automation,) = target.beta.agents.automations.list().data
    invocation = target.beta.agents.automations.invocations.create(automation.id)
    assert invocation.status == "failed" and invocation.error is not None
    assert invocation.error.code == "target_not_imported"
    (template,) = target.beta.agents.environments.templates.list().data
    renamed = target.beta.agents.environments.templates.update(template.id, name="renamed")
    assert renamed.name == "renamed"


def _new_turn(target: OpenAI, session_id: str) -> None:
    with target.beta.agents.sessions.stream(session_id, input="after the move") as stream:
        result = stream.get_final_result()
    assert (result.turn.status, result.output_text) == ("completed", "after the move")


def _narrowed(data_dir: Path, tmp_path: Path, *flags: str) -> dict[str, Any]:
    """The bundle `corebox export` writes with `flags`."""
    path = tmp_path / "narrowed.bundle"
    made = corebox(data_dir, "export", "-o", str(path), *flags)
    assert made.returncode == 0, made.stderr
    document: dict[str, Any] = json.loads(path.read_bytes())
    return document


def _scope(document: dict[str, Any]) -> dict[str, list[str]]:
    reentry = [(e["kind"], e["id"]) for e in document["needs_reentry"]]
    return {
        "agents": [a["id"] for a in document["agents"]],
        "environments": [e["id"] for e in document["environments"]],
        "sessions": [s["id"] for s in document["sessions"]],
        "reentry": [f"{kind} {id_}" for kind, id_ in reentry],
        "project tables": sorted(
            t for t in ("environment_templates", "automations", "files") if t in document
        ),
    }


def test_a_narrowed_export_carries_only_what_its_sessions_need(tmp_path: Path) -> None:
    """`--sessions` carries those sessions, the saved agents they run and the
    environments they use; `--agents` those agents and no session; neither carries the
    project's other agents and environments. A session's bundle imported elsewhere
    exports again as it was."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
    server = start_server(tmp_path / "a" / "data")
    try:
        with OpenAI(base_url=server.base_url + "/v1", api_key=API_KEY, max_retries=0) as client:
            run, idle = (client.beta.agents.create(model="scripted", name=n).id for n in "ri")
            shared = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
            client.beta.agents.environments.create(environment={"type": "openai_hosted"})
            named: Any = {"type": "openai_hosted", "environment_id": shared.id}
            events = list(
                client.beta.agents.sessions.create(
                    agent_id=run,
                    environment=named,
                    input="/say saved",
                    stream=True,
                )
            )
            first = events[0].session.id  # type: ignore[union-attr]
            second = hosted_session(client, {"type": "openai_hosted"})  # an inline agent
            own = client.beta.agents.sessions.retrieve(second).environment.id  # type: ignore[union-attr]
        data_dir = server.data_dir
        first_only = _narrowed(data_dir, tmp_path, "--sessions", first)
        assert _scope(first_only) == {
            "agents": [run],
            "environments": [shared.id],
            "sessions": [first],
            "reentry": [f"environment {shared.id}"],
            "project tables": [],
        }
        assert _scope(_narrowed(data_dir, tmp_path, "--sessions", second)) == {
            "agents": [],
            "environments": [own],
            "sessions": [second],
            "reentry": [f"environment {own}"],
            "project tables": [],
        }
        assert _scope(_narrowed(data_dir, tmp_path, "--agents", idle)) == {
            "agents": [idle],
            "environments": [],
            "sessions": [],
            "reentry": [],
            "project tables": [],
        }
        both = _narrowed(data_dir, tmp_path, "--agents", idle, "--sessions", first)
        assert _scope(both)["agents"] == sorted([run, idle])
    finally:
        server.stop()
    _carried_elsewhere(tmp_path, first_only, first)


def _carried_elsewhere(tmp_path: Path, document: dict[str, Any], session_id: str) -> None:
    """`document` imported into a fresh server, then exported by its session, is the same
    apart from the header time."""
    other = start_server(tmp_path / "b" / "data")
    try:
        path = tmp_path / "session.bundle"
        path.write_text(json.dumps(document))
        imported = corebox(other.data_dir, "import", str(path))
        assert imported.returncode == 0, imported.stderr
        again = _narrowed(other.data_dir, tmp_path, "--sessions", session_id)
    finally:
        other.stop()
    assert {**again, "header": None} == {**document, "header": None}
