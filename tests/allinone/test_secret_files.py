"""A command that writes a new secret to a file (a device's credential, an instance's
runtime token) checks the file's place before the server issues anything: a refusal
issues nothing, so no device or instance is left whose secret nobody holds."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.api.test_run_control import corebox
from tests.conftest import Server


def devices(server: Server) -> list[str]:
    where = ("--data-dir", str(server.data_dir), "--url", server.base_url)
    listed = corebox("devices", "list", *where, "--json")
    assert listed.returncode == 0, listed.stderr
    return [device["name"] for device in json.loads(listed.stdout)]


def test_a_device_whose_credential_cannot_be_saved_is_not_issued(
    server: Server, tmp_path: Path
) -> None:
    where = ("--data-dir", str(server.data_dir), "--url", server.base_url)
    missing = tmp_path / "missing" / "laptop.json"
    taken = tmp_path / "taken.json"
    taken.write_text("kept\n")
    for target, said in (
        (missing, f"cannot write {missing}: {missing.parent} does not exist"),
        (taken, f"{taken} already exists; choose a new credential file"),
    ):
        made = corebox("devices", "create", "unsaved", *where, "--credential-file", str(target))
        assert (made.returncode, made.stdout, made.stderr) == (1, "", f"corebox: error: {said}\n")
    assert "unsaved" not in devices(server)
    assert taken.read_text() == "kept\n"
    saved = tmp_path / "saved.json"
    made = corebox("devices", "create", "saved", *where, "--credential-file", str(saved))
    assert made.returncode == 0, made.stderr
    assert "saved" in devices(server) and json.loads(saved.read_text())["credential"]


def test_an_instance_whose_token_cannot_be_saved_is_not_registered(
    server: Server, tmp_path: Path
) -> None:
    comms = ("comms", "--url", server.base_url)
    role = corebox(*comms, "roles", "create", "--name", "unsaved-tokens")
    assert role.returncode == 0, role.stderr
    role_id = json.loads(role.stdout)["id"]
    missing = tmp_path / "missing" / "token"
    made = corebox(
        *comms, "instances", "create", "--role", role_id, "--name", "first",
        "--token-file", str(missing),
    )  # fmt: skip
    said = f"cannot write {missing}: {missing.parent} does not exist"
    assert (made.returncode, made.stderr) == (1, f"corebox: error: {said}\n")
    listed = corebox(*comms, "instances", "list", "--role", role_id)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["data"] == []


def test_comms_with_nothing_at_its_address_says_where_and_why() -> None:
    with socket.socket() as held:  # bound, never listening: nothing answers there
        held.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{held.getsockname()[1]}"
        done = corebox("comms", "--url", nowhere, "contacts")
    said = f"GET {nowhere}/core/v1/comms/contacts: no answer (connection refused)"
    assert (done.returncode, done.stderr) == (1, f"corebox: error: {said}\n")
