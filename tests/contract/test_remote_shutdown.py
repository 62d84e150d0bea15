"""Shutting a Runtime elsewhere down, end to end: `corebox serve --no-local-runtime`, a
device from `corebox devices create`, the real `corebox daemon`, and
`POST /core/v1/devices/{id}/shutdown` with the Core key. Core sends `device_shutdown`,
claims nothing new on that connection, and the daemon settles, closes and exits
cleanly without reconnecting; the credential stays valid."""

from __future__ import annotations

from pathlib import Path

from allinone.credentials import read_core_key
from tests.contract.test_remote_runtime import (
    WAIT,
    RawRuntime,
    http,
    new_device,
    scripted_session,
    sdk,
    serve_core_only,
    start_daemon,
)


def test_a_device_asked_to_shut_down_stops_its_daemon(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve_core_only(data_dir) as base_url:
        device = new_device(base_url, data_dir, "elsewhere")
        daemon = start_daemon(base_url, device["file"])
        try:
            with sdk(base_url) as client:  # the turn waits until the daemon has declared
                events = scripted_session(client, "before the shutdown")
            assert [e.type for e in events][-1] == "agent.session.idle"
            key = read_core_key(data_dir)
            url = f"{base_url}/core/v1/devices/{device['device_id']}/shutdown"
            status, body = http("POST", url, {}, {"Authorization": f"Bearer {key}"})
            assert status == 202, body
            assert body["status"] == "active"
            assert daemon.wait(timeout=WAIT) == 0  # a clean stop, not a refusal
            assert daemon.stderr is not None and "shut down" in daemon.stderr.read()
            status, body = http(
                "GET",
                f"{base_url}/core/v1/devices/{device['device_id']}",
                None,
                {"Authorization": f"Bearer {key}"},
            )
            assert (status, body["connected"], body["status"]) == (200, False, "active")
            status, _ = RawRuntime(base_url, device["device_id"], device["credential"]).bootstrap()
            assert status == 200  # the credential still works for a restarted daemon
            status, _ = http("POST", url, {}, {"Authorization": "Bearer nope"})
            assert status == 401
        finally:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(timeout=WAIT)
            if daemon.stderr is not None:
                daemon.stderr.close()
