"""A file write left unsettled (`unknown`, or `reserved` by a Core that stopped) is settled
from what the workspace shows at the next write, never replayed and never blocking forever."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from allinone.core.file_writes import transfer_bound
from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.api.test_run_control import sdk
from tests.conftest import start_server
from tests.support import databases


def _environment(client: OpenAI, server: Any) -> tuple[str, Path]:
    """A hosted environment, initialized, and its workspace directory on disk."""
    environment = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    client.beta.agents.environments.files.list(environment.id)  # waits for initialization
    return environment.id, server.data_dir / WORKSPACES_DIR / wire_uuid(environment.id)


def _leave(
    server: Any,
    environment_id: str,
    path: str,
    state: str,
    data: bytes,
    at: int,
    by: str | None = None,
    prior: str | None = None,
) -> str:
    """Leave a write of `data` at `path` in `state`, reserved at `at` by the Core process
    `by`, having found `prior` at its path (None: as before that was recorded), as a
    build whose transfer's outcome went unknown (or that stopped mid-write) leaves it;
    its row id."""
    row_id = f"envfile_left_{environment_id}"
    digest = hashlib.sha256(data).hexdigest()
    with databases.raw(databases.location(server.data_dir)) as db:
        db.execute(
            "INSERT INTO environment_files (id, environment_id, path, type, file_id,"
            " size_bytes, sha256, state, created_at, reserved_by, prior)"
            " VALUES (?, ?, ?, 'inline', NULL, ?, ?, ?, ?, ?, ?)",
            (row_id, environment_id, path, len(data), digest, state, at, by, prior),
        )
    return row_id


def _process(server: Any, process_id: str, stopped: bool) -> str:
    """A Core process row: one that stopped, or one still live."""
    now = int(time.time())
    with databases.raw(databases.location(server.data_dir)) as db:
        db.execute(
            "INSERT INTO core_processes (id, host, pid, started_at, heartbeat_at, stopped_at,"
            " stop_reason) VALUES (?, 'elsewhere', 1, ?, ?, ?, ?)",
            (process_id, now, now, now if stopped else None, "lapsed" if stopped else None),
        )
    return process_id


def _state(server: Any, row_id: str) -> str | None:
    with databases.raw(databases.location(server.data_dir)) as db:
        rows = db.execute("SELECT state FROM environment_files WHERE id = ?", (row_id,))
    return None if not rows else str(rows[0]["state"])


def _write(client: OpenAI, environment_id: str, path: str = "/workspace/next.txt") -> str:
    files = client.beta.agents.environments.files
    return str(files.create(environment_id, type="inline", path=path, data="T0s=").path)


def test_an_unknown_write_with_nothing_at_its_path_is_settled_as_not_written(
    client: OpenAI, server: Any
) -> None:
    environment_id, workspace = _environment(client, server)
    left = _leave(server, environment_id, "/workspace/lost/a.txt", "unknown", b"lost", 1)
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) is None
    assert not (workspace / "lost").exists()  # settled, never replayed
    assert _write(client, environment_id, "/workspace/lost/a.txt") == "/workspace/lost/a.txt"
    said = f"file write {left} to /workspace/lost/a.txt, left unknown, settled as not written"
    assert said in server.log.read_text()


def test_an_unknown_write_whose_bytes_are_there_is_settled_as_written(
    client: OpenAI, server: Any
) -> None:
    environment_id, workspace = _environment(client, server)
    (workspace / "data").mkdir()
    (workspace / "data" / "made.txt").write_bytes(b"made it")
    left = _leave(server, environment_id, "/workspace/data/made.txt", "unknown", b"made it", 1)
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) == "written"
    shown = client.beta.agents.environments.retrieve(environment_id).files
    assert sorted(f.path for f in shown) == ["/workspace/data/made.txt", "/workspace/next.txt"]


@pytest.mark.parametrize("there", ["other bytes", "a directory"])
def test_an_unknown_write_with_something_else_at_its_path_still_blocks(
    client: OpenAI, server: Any, there: str
) -> None:
    environment_id, workspace = _environment(client, server)
    if there == "a directory":
        (workspace / "maybe.txt").mkdir()
    else:
        (workspace / "maybe.txt").write_bytes(b"other bytes")
    left = _leave(server, environment_id, "/workspace/maybe.txt", "unknown", b"mine", 1)
    for _ in range(2):  # looked at again at each write, and still unsettled
        with pytest.raises(openai.ConflictError) as caught:
            _write(client, environment_id)
        assert "/workspace/maybe.txt (unknown)" in caught.value.message
        assert "checked again at the next write" in caught.value.message
        assert _state(server, left) == "unknown"
    assert not (workspace / "next.txt").exists()


def test_a_reservation_older_than_any_transfer_is_settled(client: OpenAI, server: Any) -> None:
    """A Core that stopped mid-write left its row `reserved`; no transfer lives that long."""
    environment_id, _ = _environment(client, server)
    left = _leave(server, environment_id, "/workspace/crashed.txt", "reserved", b"crashed", 1)
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) is None


def test_a_fresh_reservation_is_left_to_its_owner(client: OpenAI, server: Any) -> None:
    """A reservation as young as a live transfer may belong to a request still running
    (here or in another Core process): it is never looked at, and still blocks."""
    environment_id, _ = _environment(client, server)
    left = _leave(
        server, environment_id, "/workspace/live.txt", "reserved", b"live", int(time.time())
    )
    with pytest.raises(openai.ConflictError) as caught:
        _write(client, environment_id)
    assert "/workspace/live.txt (reserved)" in caught.value.message
    assert _state(server, left) == "reserved"


def test_a_fresh_reservation_of_a_process_that_is_gone_is_settled_at_once(
    client: OpenAI, server: Any
) -> None:
    """A Core killed mid-write left its row `reserved` seconds ago: no transfer of a gone
    process can still run, so the next write settles it without waiting out the bound."""
    environment_id, workspace = _environment(client, server)
    gone = _process(server, "proc_gone", stopped=True)
    now = int(time.time())
    left = _leave(server, environment_id, "/workspace/big.bin", "reserved", b"big", now, gone)
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) is None
    assert not (workspace / "big.bin").exists()


def test_a_fresh_reservation_of_a_live_process_is_left_to_it(client: OpenAI, server: Any) -> None:
    environment_id, _ = _environment(client, server)
    live = _process(server, "proc_live", stopped=False)
    now = int(time.time())
    left = _leave(server, environment_id, "/workspace/live.txt", "reserved", b"live", now, live)
    with pytest.raises(openai.ConflictError):
        _write(client, environment_id)
    assert _state(server, left) == "reserved"


def test_a_fresh_reservation_of_this_process_waits_for_the_bound(
    client: OpenAI, server: Any
) -> None:
    """A row this process reserved, whose request is over, may still have a transfer
    finishing in the Runtime: it waits out the bound, however long ago this process
    started (the embedded default writes no heartbeat, and is live until it stops)."""
    environment_id, _ = _environment(client, server)
    with databases.raw(databases.location(server.data_dir)) as db:
        [me] = db.execute(
            "SELECT id FROM core_processes WHERE pid = ? AND stopped_at IS NULL",
            (server.process.pid,),
        )
        db.execute("UPDATE core_processes SET heartbeat_at = 1 WHERE id = ?", (me["id"],))
    now = int(time.time())
    left = _leave(server, environment_id, "/workspace/mine.txt", "reserved", b"m", now, me["id"])
    with pytest.raises(openai.ConflictError):
        _write(client, environment_id)
    assert _state(server, left) == "reserved"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _replaced(client: OpenAI, server: Any, there: bytes | None) -> tuple[str, Path, str]:
    """An environment whose /workspace/doc.txt was written as b"old" through the API,
    then replaced by a write of b"new" left unknown, having found b"old" there; the
    workspace then holds `there` at the path (None: nothing). (environment, workspace,
    the unknown row)."""
    environment_id, workspace = _environment(client, server)
    files = client.beta.agents.environments.files
    files.create(environment_id, type="inline", path="/workspace/doc.txt", data="b2xk")  # old
    left = _leave(
        server, environment_id, "/workspace/doc.txt", "unknown", b"new", 1, prior=_sha(b"old")
    )
    if there is None:
        (workspace / "doc.txt").unlink()
    else:
        (workspace / "doc.txt").write_bytes(there)
    return environment_id, workspace, left


def test_an_unknown_replacing_write_with_the_old_bytes_there_is_settled_as_not_written(
    client: OpenAI, server: Any
) -> None:
    environment_id, workspace, left = _replaced(client, server, b"old")
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) is None  # dropped, never replayed
    assert (workspace / "doc.txt").read_bytes() == b"old"
    shown = client.beta.agents.environments.retrieve(environment_id).files
    assert sorted((f.path, f.size_bytes) for f in shown) == [
        ("/workspace/doc.txt", 3),  # the file it did not replace is still named
        ("/workspace/next.txt", 2),
    ]
    said = f"file write {left} to /workspace/doc.txt, left unknown, settled as not written"
    assert f"{said} (the file it replaces is there unchanged)" in server.log.read_text()


def test_an_unknown_replacing_write_with_the_new_bytes_there_is_settled_as_written(
    client: OpenAI, server: Any
) -> None:
    environment_id, _, left = _replaced(client, server, b"new")
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) == "written"
    shown = client.beta.agents.environments.retrieve(environment_id).files
    assert sorted((f.path, f.size_bytes) for f in shown) == [
        ("/workspace/doc.txt", 3),  # the new bytes, one row for the path
        ("/workspace/next.txt", 2),
    ]
    assert sorted(f.id for f in shown if f.path == "/workspace/doc.txt") == [left]


@pytest.mark.parametrize("there", [None, b"other"], ids=["nothing", "other bytes"])
def test_an_unknown_replacing_write_with_neither_there_still_blocks(
    client: OpenAI, server: Any, there: bytes | None
) -> None:
    """Nothing where the old file was does not prove the write did not happen (it may
    have been made and removed since)."""
    environment_id, workspace, left = _replaced(client, server, there)
    for _ in range(2):
        with pytest.raises(openai.ConflictError) as caught:
            _write(client, environment_id)
        assert "/workspace/doc.txt (unknown)" in caught.value.message
        assert _state(server, left) == "unknown"
    assert not (workspace / "next.txt").exists()


def test_an_unknown_write_over_an_unreadable_path_still_blocks(client: OpenAI, server: Any) -> None:
    """A write that could not read what its path held settles only on its own bytes."""
    environment_id, _ = _environment(client, server)
    left = _leave(
        server, environment_id, "/workspace/big.bin", "unknown", b"n", 1, None, "unreadable"
    )
    with pytest.raises(openai.ConflictError):
        _write(client, environment_id)
    assert _state(server, left) == "unknown"


def test_a_pending_write_of_a_process_that_is_gone_is_settled_unlooked(
    client: OpenAI, server: Any
) -> None:
    """A row whose prior state was never recorded never began its transfer: once its
    owner can run no transfer, it did not happen, whatever the path holds (here, by
    chance, the very bytes it would have written)."""
    environment_id, workspace = _environment(client, server)
    gone = _process(server, "proc_gone_pending", stopped=True)
    (workspace / "same.txt").write_bytes(b"same")
    now = int(time.time())
    left = _leave(
        server, environment_id, "/workspace/same.txt", "reserved", b"same", now, gone, "pending"
    )
    assert _write(client, environment_id) == "/workspace/next.txt"
    assert _state(server, left) is None
    assert (workspace / "same.txt").read_bytes() == b"same"
    said = f"file write {left} to /workspace/same.txt, left reserved, settled as not written"
    assert f"{said} (its transfer never began)" in server.log.read_text()


def test_a_pending_write_of_a_live_process_is_left_to_it(client: OpenAI, server: Any) -> None:
    environment_id, _ = _environment(client, server)
    live = _process(server, "proc_live_pending", stopped=False)
    now = int(time.time())
    left = _leave(
        server, environment_id, "/workspace/mine.txt", "reserved", b"m", now, live, "pending"
    )
    with pytest.raises(openai.ConflictError):
        _write(client, environment_id)
    assert _state(server, left) == "reserved"


def test_a_reservation_naming_no_process_is_settled_at_once_after_a_restart(
    tmp_path: Path,
) -> None:
    """A write an earlier build (before rows named their process) left `reserved`, here of
    a 60 MB file, whose bound is over 16 minutes. On the embedded SQLite default, the
    process that reserved it stopped before this one could start: the first write after
    the restart settles it at once. Processes sharing a PostgreSQL database keep the
    bound, since the row's process may be a live peer."""
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            environment_id, workspace = _environment(client, server)
    finally:
        server.stop()
    left = _leave(
        server, environment_id, "/workspace/big.bin", "reserved", b"big", int(time.time()) - 1
    )
    with databases.raw(databases.location(server.data_dir)) as db:
        db.execute("UPDATE environment_files SET size_bytes = ? WHERE id = ?", (60 << 20, left))
    assert transfer_bound(60 << 20) > 16 * 60
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            if databases.url(server.data_dir) is not None:
                with pytest.raises(openai.ConflictError) as caught:
                    _write(client, environment_id)
                assert "/workspace/big.bin (reserved)" in caught.value.message
                assert _state(server, left) == "reserved"
                return
            assert _write(client, environment_id) == "/workspace/next.txt"
    finally:
        server.stop()
    assert _state(server, left) is None
    assert not (workspace / "big.bin").exists()
    said = f"file write {left} to /workspace/big.bin, left reserved, settled as not written"
    assert f"{said} (nothing is at its path)" in server.log.read_text()
