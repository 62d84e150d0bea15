"""`corebox comms ...` finds the server as every command that talks to one does (`--url`,
else COREBOX_URL, else COREBOX_HOST and COREBOX_PORT), takes its options after the
subcommand too, and says what went wrong in words that are true."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from allinone import cli
from tests.conftest import API_KEY, Server

Corebox = Callable[..., tuple[int, str, str]]


@pytest.fixture
def corebox(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Corebox:
    """`corebox comms ARGS` in this process, with a project key and no address set."""
    monkeypatch.chdir(tmp_path)  # no corebox.toml
    for name in ("COREBOX_URL", "COREBOX_HOST", "COREBOX_PORT", "COREBOX_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COREBOX_API_KEY", API_KEY)

    def run(*argv: str) -> tuple[int, str, str]:
        status = cli.main(["comms", *argv])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def test_the_configured_host_and_port_name_the_server(
    server: Server, corebox: Corebox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COREBOX_HOST", "localhost")
    monkeypatch.setenv("COREBOX_PORT", str(server.port))
    status, out, err = corebox("roles", "list")
    assert (status, err) == (0, "")
    assert json.loads(out)["object"] == "list"


def test_the_servers_options_may_follow_the_subcommand(server: Server, corebox: Corebox) -> None:
    for argv in (
        ("--url", server.base_url, "roles", "list"),
        ("roles", "list", "--url", server.base_url),
        ("contacts", "--url", server.base_url),
        ("--url", "http://127.0.0.1:9", "roles", "list", "--url", server.base_url),
    ):
        status, out, err = corebox(*argv)
        assert (status, err) == (0, ""), argv
        assert json.loads(out)["object"] == "list"


def test_a_wrong_expected_stream_id_is_said_not_to_match(server: Server, corebox: Corebox) -> None:
    where = ("--url", server.base_url)
    made = corebox("roles", "create", "--name", "rotated", *where)
    role = json.loads(made[1])
    wrong = ("--role", role["id"], "--expected-stream-id", "cstream_wrong", *where)
    status, out, err = corebox("stream", "rotate", *wrong)
    assert (status, out) == (1, "")
    assert (
        "The expected stream id cstream_wrong does not match the role's current stream id"
        f" {role['stream_id']}." in err
    ), err
