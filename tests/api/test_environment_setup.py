"""Environment set-up progress: each step is recorded durably and shown on retrieve as
`x_corebox.setup` (phase, package, done of total), through the official SDK; a set-up
command still running when the server stops ends with everything it started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.api.support import commands_in, until
from tests.conftest import API_KEY, Server, start_server
from tests.support.wheels import HOLD, hosted

SETUP_SECONDS = 120.0  # installing packages from a local index, then set-up commands


def setup_of(client: OpenAI, environment_id: str) -> dict[str, Any] | None:
    environment = client.beta.agents.environments.retrieve(environment_id)
    found: dict[str, Any] | None = environment.x_corebox["setup"]  # type: ignore[attr-defined]
    return found


def in_phase(client: OpenAI, environment_id: str, phase: str) -> dict[str, Any] | None:
    """The environment's set-up progress once it is in `phase`, else None."""
    setup = setup_of(client, environment_id)
    return setup if setup is not None and setup["phase"] == phase else None


def test_set_up_reports_each_package_then_each_setup_command_then_done(
    client: OpenAI, server: Server
) -> None:
    environment = client.beta.agents.environments.create(
        environment=hosted(["alpha_pkg", "beta_pkg"], [HOLD])  # type: ignore[arg-type]
    )
    held = until(lambda: in_phase(client, environment.id, "running_setup"), SETUP_SECONDS)
    assert held["done"] == 0 and held["total"] == 1
    assert held["package"] is None
    assert client.beta.agents.environments.retrieve(environment.id).status == "pending"
    workspace = server.data_dir / WORKSPACES_DIR / wire_uuid(environment.id)
    assert (workspace / ".packages" / "python" / "alpha_pkg.py").is_file()
    assert (workspace / ".packages" / "python" / "beta_pkg.py").is_file()
    (workspace / "release").touch()
    done = until(lambda: in_phase(client, environment.id, "done"), SETUP_SECONDS)
    assert done["failure"] is None
    assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    listed = [e for e in client.beta.agents.environments.list() if e.id == environment.id]
    assert listed[0].x_corebox["setup"] == done  # type: ignore[attr-defined]


def test_a_failed_install_names_its_packages_and_their_place(client: OpenAI) -> None:
    spec = hosted(["alpha_pkg"], [])
    spec["packages"]["python"].append("wheels/missing-1.0-py3-none-any.whl")
    environment = client.beta.agents.environments.create(environment=spec)  # type: ignore[arg-type]
    failed = until(lambda: in_phase(client, environment.id, "failed"), SETUP_SECONDS)
    assert failed["kind"] == "python"
    # The packages of a kind are installed together: the step that failed names them all.
    assert failed["package"] == (
        "wheels/alpha_pkg-1.0-py3-none-any.whl, wheels/missing-1.0-py3-none-any.whl"
    )
    assert (failed["done"], failed["total"]) == (0, 2)
    assert "runtime_preparation_failed" in failed["failure"]
    assert client.beta.agents.environments.retrieve(environment.id).status == "failed"


def test_an_environment_without_set_up_steps_reports_done(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "openai_hosted"},
            input="hi",
            stream=True,
        )
    )
    assert events[-1].type == "agent.session.idle"  # type: ignore[attr-defined]
    session = client.beta.agents.sessions.retrieve(events[0].session.id)  # type: ignore[attr-defined]
    environment_id = session.environment.id  # type: ignore[union-attr]
    setup = setup_of(client, environment_id)
    assert setup is not None and setup["phase"] == "done"
    assert (setup["done"], setup["total"]) == (0, 0)


def test_a_session_waiting_on_set_up_sees_it_on_its_event_stream(
    client: OpenAI, server: Server
) -> None:
    live = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment=hosted(["alpha_pkg"], [HOLD]),  # type: ignore[arg-type]
        input="/say Set up.",
        stream=True,
    )
    seen: list[tuple[str, str, str]] = []
    environment_id = ""
    with live:
        for event in live:
            if event.type == "agent.session.created":
                environment_id = event.session.environment.id  # type: ignore[union-attr]
            if event.type.startswith("agent.session.environment."):
                setup = event.x_corebox["setup"]  # type: ignore[union-attr]
                seen.append((event.type, event.environment.status, setup["phase"]))  # type: ignore[union-attr]
                assert event.environment.id == environment_id  # type: ignore[union-attr]
                assert event.turn_id is not None  # type: ignore[union-attr]
                if setup["phase"] == "running_setup":
                    workspace = server.data_dir / WORKSPACES_DIR / wire_uuid(environment_id)
                    (workspace / "release").touch()
            if event.type == "agent.session.idle":
                break
    assert seen == [
        ("agent.session.environment.pending", "pending", "creating"),
        ("agent.session.environment.pending", "pending", "installing"),
        ("agent.session.environment.pending", "pending", "running_setup"),
        ("agent.session.environment.ready", "ready", "done"),
    ]


def test_stopping_the_server_during_a_setup_command_ends_the_whole_command(
    tmp_path: Path,
) -> None:
    running = start_server(tmp_path / "data")
    try:
        with OpenAI(base_url=f"{running.base_url}/v1", api_key=API_KEY, max_retries=0) as client:
            environment = client.beta.agents.environments.create(
                environment=hosted([], ["sleep 1000 & touch started; wait"])  # type: ignore[arg-type]
            )
        directory = running.data_dir / WORKSPACES_DIR / wire_uuid(environment.id)
        until(lambda: (directory / "started").exists(), 60)
        assert commands_in(directory)
    finally:
        running.stop()
    # The setup command's children went with it (the deadline guards against a hang).
    until(lambda: not commands_in(directory), 30)
