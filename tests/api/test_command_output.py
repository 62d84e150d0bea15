"""What a workspace command prints, on a real `corebox serve` of the test's own: the
item keeps a bounded output however much the command prints, the server's memory does
not follow the output, a command flooding its output is cancelled and confirmed, and
the item's duration is the command's."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api.support import commands_in, until
from tests.conftest import API_KEY, Server, start_server

KEPT_CHARS = 64 * 1024
FLOOD_BYTES = 400 * 1024 * 1024
TURN_ENDS = ("completed", "failed", "cancelled")


@pytest.fixture
def own(tmp_path: Path) -> Iterator[tuple[Server, OpenAI]]:
    """A server of this test's own (its memory is measured) and an SDK client for it."""
    running = start_server(tmp_path / "data")
    try:
        with OpenAI(base_url=f"{running.base_url}/v1", api_key=API_KEY, max_retries=0) as client:
            yield running, client
    finally:
        running.stop()


def workspace(tmp_path: Path) -> dict[str, Any]:
    directory = tmp_path / "ws"
    directory.mkdir(exist_ok=True)
    return {"type": "self_hosted", "workspace_directory": str(directory)}


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def command_items(client: OpenAI, session_id: str) -> list[Any]:
    listed = client.beta.agents.sessions.items.list(session_id, order="asc").data
    return [i for i in listed if i.type == "command_execution"]


def test_a_flood_of_output_keeps_the_item_bounded_and_the_server_small(
    own: tuple[Server, OpenAI], tmp_path: Path
) -> None:
    server, client = own
    # A first command brings the harness and its paths to their steady size.
    warm = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=workspace(tmp_path),  # type: ignore[arg-type]
            input="/exec yes | head -c 1000000",
            stream=True,
        )
    )
    assert warm[-2].type == "agent.session.turn.completed", [e.type for e in warm]
    before = peak_rss_kib(server.process.pid)
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=workspace(tmp_path),  # type: ignore[arg-type]
            input=f"/exec yes | head -c {FLOOD_BYTES}",
            stream=True,
        )
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    grown = peak_rss_kib(server.process.pid) - before
    # Holding the output would take at least its size; reading it as it comes, a few
    # chunks at most.
    assert grown * 1024 < FLOOD_BYTES // 8, (grown, before)
    (item,) = command_items(client, str(events[0].session.id))  # type: ignore[attr-defined]
    assert item.exit_code == 0
    assert item.output == "y\n" * (KEPT_CHARS // 2) + "\n[truncated]"


# Floods its output through a pipe grown to 1 MiB (the most an unprivileged process may
# ask), once it has left a mark in the workspace: whatever the server has read, the pipe
# holds far more when the cancel arrives.
FLOOD = (
    "import fcntl, os; fcntl.fcntl(1, 1031, 1 << 20); open('flooding', 'w').close(); "
    "[os.write(1, b'y' * 65536) for _ in iter(int, 1)]"
)


def test_cancelling_a_command_that_floods_its_output_is_confirmed(
    own: tuple[Server, OpenAI], tmp_path: Path
) -> None:
    _, client = own
    space = workspace(tmp_path)
    directory = Path(space["workspace_directory"])
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=space,  # type: ignore[arg-type]
            input=f"/exec {shlex.quote(sys.executable)} -c {shlex.quote(FLOOD)}",
            stream=True,
        )
    )
    session_id = str(next(live).session.id)  # type: ignore[attr-defined]
    until(lambda: (directory / "flooding").exists(), 60)
    client.beta.agents.sessions.events.create(
        session_id,
        events=[{"type": "agent.session.input.cancel"}],  # type: ignore[list-item]
    )
    ends = [e for e in live if e.type.split(".")[-1] in TURN_ENDS]
    assert ends[0].type == "agent.session.turn.cancelled", ends
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "cancelled", turn.error
    # The command's whole process group was killed (the deadline only guards against a
    # hang while the kernel ends what was signalled).
    until(lambda: not commands_in(directory), 30)


def test_a_command_item_shows_how_long_the_command_ran(
    own: tuple[Server, OpenAI], tmp_path: Path
) -> None:
    _, client = own
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=workspace(tmp_path),  # type: ignore[arg-type]
            input="/exec sleep 1",
            stream=True,
        )
    )
    (item,) = command_items(client, str(events[0].session.id))  # type: ignore[attr-defined]
    assert item.status == "completed"
    assert item.duration_ms is not None and item.duration_ms >= 1000
