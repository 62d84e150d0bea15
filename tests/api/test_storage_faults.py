"""A full disk, for real: `corebox serve` with its data directory on a small tmpfs that a
filler file then fills. Writes answer 503 with `Retry-After` in the API's error format
(never a 500), `/readyz` reports storage failing, and once space is freed both recover.

Mounting a tmpfs needs CAP_SYS_ADMIN; where the test runs without it, it is skipped."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import core_key, http
from tests.conftest import API_KEY, start_server

PROJECT = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}
DISK_BYTES = 32 * 1024 * 1024


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
