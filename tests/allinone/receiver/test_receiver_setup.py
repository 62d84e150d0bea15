"""The receiver as an installed program: private files or nothing, one process per
store, `run` as its own scheduler, disabling, and no token anywhere it should not be."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.allinone.comms.comms_helpers import pair
from tests.allinone.receiver.receiver_helpers import (
    env,
    make_side,
    messages_from_peer,
    once,
    receiver,
    status,
)
from tests.conftest import Server

DEADLINE_SECONDS = 30.0


@pytest.mark.parametrize("target", ["directory", "config", "token", "handler_cwd"])
def test_it_refuses_to_start_unless_everything_is_private(
    server: Server, tmp_path: Path, target: str
) -> None:
    _, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "hi"))
    path = {
        "directory": side.directory,
        "config": side.config,
        "token": side.directory / "token",
        "handler_cwd": side.work,
    }[target]
    path.chmod(0o755 if target in ("directory", "handler_cwd") else 0o644)
    done = receiver(side, "once")
    assert done.returncode == 1
    assert "must be 0" in done.stderr and str(path) in done.stderr
    assert not (side.directory / "receiver.db").exists()


def test_a_configuration_file_that_is_not_there_is_named(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)  # a directory open to others, which is not the point here
    missing = shared / "config.json"
    done = subprocess.run(
        [sys.executable, "-m", "allinone", "receiver", "once", "--config", str(missing)],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"corebox: error: there is no configuration file {missing}\n",
    )


def test_files_it_creates_are_private(server: Server, tmp_path: Path) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob")
    alice.open(bob.role_id, "hello")
    once(side)
    for name in ("receiver.db", "receiver.lock"):
        assert (side.directory / name).stat().st_mode & 0o077 == 0, name


def test_a_second_process_is_refused_by_the_store_lock(server: Server, tmp_path: Path) -> None:
    _, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob")
    once(side)
    fd = os.open(side.directory / "receiver.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for command in ("once", "run"):
            done = receiver(side, command)
            assert done.returncode == 4 and "another receiver process" in done.stderr
        assert receiver(side, "status").returncode == 0  # status needs no lock
    finally:
        os.close(fd)


def test_run_polls_handles_and_stops_on_sigterm(server: Server, tmp_path: Path) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "from run"))
    process = subprocess.Popen(
        [sys.executable, "-m", "allinone", "receiver", "run", "--config", str(side.config)],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        contact = alice.open(bob.role_id, "are you there?").body["contact_id"]
        end = time.monotonic() + DEADLINE_SECONDS
        while messages_from_peer(alice, contact) != ["from run"]:
            assert time.monotonic() < end, "run did not answer in time"
            assert process.poll() is None
            time.sleep(0.05)
        second = receiver(side, "once")
        assert second.returncode == 4  # never a second scheduler on the same store
        assert bob.get("/communication/receiver").body["fresh"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


def test_disabling_stops_local_work_and_reports_enabled_false(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "no"))
    once(side)
    assert bob.get("/communication/receiver").body["fresh"] is True
    config = json.loads(side.config.read_text())
    side.config.write_text(json.dumps({**config, "enabled": False}))
    alice.open(bob.role_id, "while disabled")
    report = once(side)
    assert report["enabled"] is False and report["received"] == 0
    view = bob.get("/communication/receiver").body
    assert view["enabled"] is False and view["fresh"] is False
    assert side.handled() == []
    assert status(side)["local"]["events"] == 0


def test_the_token_appears_in_no_output_and_no_log(server: Server, tmp_path: Path) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "quiet"))
    alice.open(bob.role_id, "secret business")
    done = receiver(side, "once", "--log-level", "debug")
    shown = receiver(side, "status", "--log-level", "debug")
    for result in (done, shown):
        assert result.returncode == 0, result.stderr
        assert bob.token not in result.stdout and bob.token not in result.stderr
        assert "secret business" not in result.stderr
    assert bob.token not in server.log.read_text()


def test_status_reports_local_state_and_the_live_platform(server: Server, tmp_path: Path) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob")
    assert status(side)["local"] is None
    alice.open(bob.role_id, "count me")
    once(side)
    shown = status(side)
    local = shown["local"]
    assert local["cached"] is True and local["events"] == 1 and local["pending"] == 1
    assert local["unreceipted"] == 0 and local["role_id"] == bob.role_id
    assert shown["platform"]["me"]["instance"]["id"] == bob.instance_id
    assert isinstance(shown["platform"]["me"]["server_time"], int)
    assert shown["authorized"] == {
        "receive": True,
        "dispatch": False,
        "reply": False,
        "notify": False,
    }
