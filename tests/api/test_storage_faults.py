"""A full disk, for real: `corebox serve` with its data directory on a small tmpfs that a
filler file then fills. Writes answer 503 with `Retry-After` in the API's error format
(never a 500), `/readyz` reports storage failing, and once space is freed both recover.
A turn whose frames could not be stored settles as soon as space is back, not at the
expiry of its lease.

Mounting a tmpfs needs CAP_SYS_ADMIN; where the test runs without it, it is skipped."""

from __future__ import annotations

import contextlib
import errno
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import core_key, http, until
from tests.conftest import API_KEY, start_server
from tests.support.postgres import sqlite_only

pytestmark = sqlite_only("the database file on a full disk")

PROJECT = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}
DISK_BYTES = 32 * 1024 * 1024
# Well inside the turn lease (60 s) plus its expiry sweep (30 s): a turn that settles
# within this did not wait for its lease.
SETTLE_SECONDS = 20.0
FRAMES_LOST = "its frames could not be stored"
SETTLEMENT_RETRIED = "retrying a write"


@contextlib.contextmanager
def small_disk(mountpoint: Path) -> Iterator[Path]:
    mountpoint.mkdir(mode=0o700)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0700", "tmpfs", str(mountpoint)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("a tmpfs cannot be mounted here")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill(path: Path) -> None:
    """Write `path` until the disk has no byte left."""
    with path.open("wb", buffering=0) as filler:
        for size in (1024 * 1024, 64 * 1024, 4096, 512, 1):
            try:
                while True:
                    filler.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc


def create_vault(base_url: str, name: str) -> tuple[int, dict[str, str], dict[str, str]]:
    status, body, headers = http(base_url, "POST", "/v1/vaults", {"name": name}, PROJECT)
    return status, body, headers


def test_a_full_disk_is_a_retryable_503_and_recovers(tmp_path: Path) -> None:
    with small_disk(tmp_path / "data") as data_dir:
        server = start_server(data_dir)
        try:
            base = server.base_url
            owner = {"Authorization": f"Bearer {core_key(data_dir)}"}
            assert create_vault(base, "before")[0] == 200
            fill(data_dir / "filler")
            statuses = []
            for attempt in range(200):
                status, body, headers = create_vault(base, f"full-{attempt}")
                statuses.append(status)
                if status != 200:
                    break
            assert status == 503, statuses
            assert 500 not in statuses
            assert int(headers["retry-after"]) >= 1
            assert body["error"]["code"] == "storage_unavailable"
            assert body["error"]["type"] == "server_error"
            for path, create in (
                ("/v1/agents", {"name": "a", "model": "scripted"}),
                (
                    "/v1/agents/sessions",
                    {"agent": {"model": "scripted"}, "environment": {"type": "none"}, "input": "x"},
                ),
            ):
                status, body, headers = http(base, "POST", path, create, PROJECT)
                assert status == 503 and "retry-after" in headers, (path, status, body)

            status, ready, _ = http(base, "GET", "/readyz", headers=owner)
            assert status == 503 and "storage" in ready["missing"], ready
            assert ready["checks"]["storage"]["ok"] is False
            status, public, _ = http(base, "GET", "/readyz")
            assert status == 503 and public["checks"]["storage"] == {"ok": False}

            (data_dir / "filler").unlink()
            status, body, _ = create_vault(base, "after")
            assert status == 200, body
            status, ready, _ = http(base, "GET", "/readyz", headers=owner)
            assert status == 200, ready
        finally:
            server.stop()


def test_a_turn_that_meets_a_full_disk_settles_once_space_is_back(tmp_path: Path) -> None:
    with small_disk(tmp_path / "data") as data_dir:
        server = start_server(data_dir)
        try:
            base = server.base_url
            status, session, _ = http(
                base,
                "POST",
                "/v1/agents/sessions",
                {
                    "agent": {"model": "scripted"},
                    "environment": {"type": "none"},
                    "input": "/sleep 1000\n/say " + "many words " * 2000,
                },
                PROJECT,
            )
            assert status == 200, session
            fill(data_dir / "filler")

            def turn_met_the_full_disk() -> str | None:
                # Read from the server's log: asking /readyz would itself write.
                log = server.log.read_text(encoding="utf-8", errors="replace")
                for line in (FRAMES_LOST, SETTLEMENT_RETRIED):
                    if line in log:
                        return line
                return None

            met = until(turn_met_the_full_disk, SETTLE_SECONDS)
            freed = time.monotonic()
            (data_dir / "filler").unlink()
            turns = f"/v1/agents/sessions/{session['id']}/turns"

            def settled() -> dict[str, object] | None:
                status, page, _ = http(base, "GET", turns, headers=PROJECT)
                assert status == 200, page
                turn: dict[str, object] = page["data"][0]
                return turn if turn["status"] in ("completed", "failed") else None

            turn = until(settled, SETTLE_SECONDS)
            assert time.monotonic() - freed < SETTLE_SECONDS
            if met == FRAMES_LOST:
                assert turn["status"] == "failed"
                assert turn["x_corebox"]["error_code"] == "storage_unavailable"  # type: ignore[index]
            else:
                assert turn["status"] == "completed"
        finally:
            server.stop()
