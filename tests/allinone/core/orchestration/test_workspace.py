"""Core's workspace client against a Runtime that answers as the seed allows: statuses
are followed to the final one, and a rejected set-up fails the environment and the
sessions behind it at once, with the reason."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.core.orchestration.hostile import (
    RealCore,
    ScriptedPeer,
    connected,
    in_thread,
    initialized,
)
from tests.support import databases


def _listing(names: list[str]) -> dict[str, Any]:
    return {
        "outcome": "completed",
        "close_acknowledged": True,
        "directory": {
            "entries": [{"name": n, "kind": "file", "size_bytes": 1} for n in names],
            "truncated": False,
        },
    }


def test_a_read_only_preparation_is_followed_past_preparing(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            environment = await initialized(peer, client)
            listed = asyncio.create_task(
                in_thread(lambda: client.beta.agents.environments.files.list(environment.id))
            )
            await peer.read_only_ready()
            read = await peer.receive("workspace_read")
            await peer.send("workspace_read_result", read["id"], _listing(["a.txt"]))
            await peer.released()
            page = await asyncio.wait_for(listed, 20)
            assert [f.path for f in page.data] == ["/workspace/a.txt"]

    asyncio.run(main())


def test_a_rejected_set_up_fails_the_environment_and_its_session_promptly(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            await peer.read_only_ready()
            begin = await peer.receive("runtime_prepare")
            assert begin["payload"]["initialization"]["action"] == "setup"
            await peer.send(
                "runtime_prepare_result",
                begin["id"],
                {"outcome": "rejected", "error_code": "runtime_preparation_rejected"},
            )
            await peer.released()
            events = await asyncio.wait_for(created, 20)
            await in_thread(lambda: _check_failed(client, events))

    asyncio.run(main())


def _create(client: OpenAI) -> list[Any]:
    return list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "openai_hosted", "setup_commands": [{"command": "true"}]},
            input="never runs",
            stream=True,
        )
    )


def _check_failed(client: OpenAI, events: list[Any]) -> None:
    assert [e.type for e in events][-2:] == ["agent.session.turn.failed", "agent.session.failed"]
    session = client.beta.agents.sessions.retrieve(events[0].session.id)
    assert session.status == "failed"
    assert session.error is not None and "runtime_preparation_rejected" in session.error
    environment = client.beta.agents.environments.retrieve(session.environment.id)  # type: ignore[union-attr]
    assert environment.status == "failed"
    assert "runtime_preparation_rejected" in environment.x_corebox["failure"]  # type: ignore[attr-defined]


async def _write_answered(core: RealCore, commit: dict[str, Any]) -> tuple[Any, Any, str]:
    """Write a file; the peer answers begin and chunk as a Runtime must and the commit
    (or the begin, for a rejection) with `commit`. Returns (the API error, the
    environment afterwards, its id)."""
    peer = await core.runtime()
    with core.client() as client:
        environment = await in_thread(
            lambda: client.beta.agents.environments.create(environment={"type": "openai_hosted"})
        )
        await peer.read_only_ready()
        await peer.released()

        def write() -> Exception:
            try:
                client.beta.agents.environments.files.create(
                    environment.id, type="inline", path="/workspace/a.txt", data="aGk="
                )
            except Exception as exc:
                return exc
            raise AssertionError("the write was reported as a success")

        writing = asyncio.create_task(in_thread(write))
        await peer.read_only_ready()
        await peer.nothing_there()
        begin = await peer.receive("workspace_write")
        if commit["outcome"] == "rejected":
            await peer.send("workspace_write_result", begin["id"], commit)
        else:
            await peer.send("workspace_write_result", begin["id"], {"outcome": "ready"})
            chunk = await peer.receive("workspace_write")
            await peer.send(
                "workspace_write_result", chunk["id"], {"outcome": "received", "offset": 2}
            )
            final = await peer.receive("workspace_write")
            assert final["payload"]["step"] == "commit"
            await peer.send("workspace_write_result", final["id"], commit)
        await peer.released()
        error = await asyncio.wait_for(writing, 20)
        after = await in_thread(lambda: client.beta.agents.environments.retrieve(environment.id))
        return error, after, environment.id


def _unknown_and_blocking(core: RealCore, error: Any, after: Any, environment_id: str) -> None:
    assert error.status_code == 503, error
    assert "unknown" in error.message
    assert after.files == []  # not recorded as written
    with core.client() as client:
        try:
            client.beta.agents.environments.files.create(
                environment_id, type="inline", path="/workspace/b.txt", data="aGk="
            )
        except Exception as exc:
            assert getattr(exc, "status_code", None) == 409, exc
        else:
            raise AssertionError("a write after an unknown one was accepted")


def test_a_write_whose_commit_is_unconfirmed_is_reported_unknown(tmp_path: Path) -> None:
    async def main() -> None:
        async with RealCore(tmp_path) as core:
            error, after, environment_id = await _write_answered(
                core, {"outcome": "unknown", "error_code": "write_unconfirmed"}
            )
            await in_thread(lambda: _unknown_and_blocking(core, error, after, environment_id))

    asyncio.run(main())


def test_a_rejection_with_a_code_outside_the_finite_set_is_unknown(tmp_path: Path) -> None:
    async def main() -> None:
        async with RealCore(tmp_path) as core:
            error, after, environment_id = await _write_answered(
                core, {"outcome": "rejected", "error_code": "disk_on_fire"}
            )
            await in_thread(lambda: _unknown_and_blocking(core, error, after, environment_id))

    asyncio.run(main())


def test_a_session_behind_a_failed_environment_fails_with_no_runtime_connected(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            environment = await in_thread(
                lambda: client.beta.agents.environments.create(
                    environment={
                        "type": "openai_hosted",
                        "setup_commands": [{"command": "true"}],
                    }
                )
            )
            await peer.read_only_ready()
            begin = await peer.receive("runtime_prepare")
            await peer.send(
                "runtime_prepare_result",
                begin["id"],
                {"outcome": "failed", "error_code": "runtime_preparation_failed"},
            )
            await peer.released()
            await peer.ws.close()
            events = await in_thread(
                lambda: list(
                    client.beta.agents.sessions.create(
                        agent={"model": "scripted"},
                        environment={
                            "type": "openai_hosted",
                            "environment_id": environment.id,
                        },  # type: ignore[typeddict-unknown-key]
                        input="never runs",
                        stream=True,
                    )
                )
            )
            assert [e.type for e in events][-2:] == [
                "agent.session.turn.failed",
                "agent.session.failed",
            ]
            assert "runtime_preparation_failed" in events[-1].session.error

    asyncio.run(main())


def _file(data: bytes) -> dict[str, Any]:
    """A read's answer: the regular file there, whole."""
    body = base64.b64encode(data).decode()
    return {"outcome": "completed", "close_acknowledged": True, "data": body}


async def _transfer(peer: ScriptedPeer, commit: dict[str, Any]) -> dict[str, Any]:
    """Answer a two-byte write's begin and chunk as a Runtime must, its commit with
    `commit`, then its release; return its begin."""
    begin = await peer.receive("workspace_write")
    await peer.send("workspace_write_result", begin["id"], {"outcome": "ready"})
    chunk = await peer.receive("workspace_write")
    await peer.send("workspace_write_result", chunk["id"], {"outcome": "received", "offset": 2})
    final = await peer.receive("workspace_write")
    assert final["payload"]["step"] == "commit"
    await peer.send("workspace_write_result", final["id"], commit)
    await peer.released()
    return begin


def _writer(client: OpenAI, environment_id: str, path: str) -> Any:
    """Start writing two bytes to `path`; the task gives the file or the API error."""

    def write() -> Any:
        try:
            return client.beta.agents.environments.files.create(
                environment_id, type="inline", path=path, data="aGk="
            )
        except Exception as exc:
            return exc

    return asyncio.create_task(in_thread(write))


def _priors(tmp_path: Path, environment_id: str) -> list[tuple[str, str, str | None]]:
    with databases.raw(databases.location(tmp_path / "data")) as db:
        rows = db.execute(
            "SELECT path, state, prior FROM environment_files WHERE environment_id = ?"
            " ORDER BY created_at, id",
            (environment_id,),
        )
    return [(str(r["path"]), str(r["state"]), r["prior"]) for r in rows]


def test_what_a_write_replaces_is_recorded_before_it_begins(tmp_path: Path) -> None:
    """The write reads its path (here a file holding b"old") and records its sha256
    before the begin is sent; its commit left unknown, the next write reads the path
    again, finds the old bytes, settles it as not written, and goes through."""
    old = hashlib.sha256(b"old").hexdigest()

    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            environment = await initialized(peer, client)
            writing = _writer(client, environment.id, "/workspace/a.txt")
            await peer.read_only_ready()
            read = await peer.receive("workspace_read")
            assert read["payload"]["path"] == "a.txt"
            await peer.send("workspace_read_result", read["id"], _file(b"old"))
            begin = await peer.receive("workspace_write")
            recorded = await in_thread(lambda: _priors(tmp_path, environment.id))
            assert recorded == [("/workspace/a.txt", "reserved", old)]
            await peer.send("workspace_write_result", begin["id"], {"outcome": "ready"})
            chunk = await peer.receive("workspace_write")
            await peer.send(
                "workspace_write_result", chunk["id"], {"outcome": "received", "offset": 2}
            )
            commit = await peer.receive("workspace_write")
            unknown = {"outcome": "unknown", "error_code": "write_unconfirmed"}
            await peer.send("workspace_write_result", commit["id"], unknown)
            await peer.released()
            assert (await asyncio.wait_for(writing, 20)).status_code == 503
            writing = _writer(client, environment.id, "/workspace/b.txt")
            await peer.read_only_ready()  # the settlement looks at a.txt
            read = await peer.receive("workspace_read")
            assert read["payload"]["path"] == "a.txt"
            await peer.send("workspace_read_result", read["id"], _file(b"old"))
            await peer.released()
            await peer.read_only_ready()  # then b.txt is written
            await peer.nothing_there()
            await _transfer(peer, {"outcome": "completed", "size_bytes": 2})
            assert (await asyncio.wait_for(writing, 20)).path == "/workspace/b.txt"
            after = await in_thread(lambda: _priors(tmp_path, environment.id))
            assert after == [("/workspace/b.txt", "written", "absent")]

    asyncio.run(main())


def test_a_write_whose_path_cannot_be_read_first_never_begins(tmp_path: Path) -> None:
    """A read of the path whose reply proves nothing: the transfer is never begun, the
    request answers 503 leaving no row, and the next write is not blocked by it."""

    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            environment = await in_thread(
                lambda: client.beta.agents.environments.create(
                    environment={"type": "openai_hosted"}
                )
            )
            await peer.read_only_ready()
            await peer.released()
            writing = _writer(client, environment.id, "/workspace/a.txt")
            await peer.read_only_ready()
            read = await peer.receive("workspace_read")
            unproven = {"outcome": "unknown", "error_code": "read_unconfirmed"}
            await peer.send("workspace_read_result", read["id"], unproven)
            await peer.released()
            error = await asyncio.wait_for(writing, 20)
            assert error.status_code == 503 and "nothing was written" in error.message
            assert await in_thread(lambda: _priors(tmp_path, environment.id)) == []
            writing = _writer(client, environment.id, "/workspace/a.txt")
            await peer.read_only_ready()
            await peer.nothing_there()
            await _transfer(peer, {"outcome": "completed", "size_bytes": 2})
            assert (await asyncio.wait_for(writing, 20)).path == "/workspace/a.txt"

    asyncio.run(main())
