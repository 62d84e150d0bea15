"""Suspension fencing on the real Dispatcher: frames in, frames out."""

from __future__ import annotations

import asyncio
import gc
import uuid
import warnings
from pathlib import Path
from typing import Any

import msgspec

from runtime.dispatcher import Dispatcher
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto import execution as wire
from runtime.proto.codec import Frame
from runtime.proto.suspension import EnvironmentQuiesce, EnvironmentResume
from runtime.workspaces import Workspaces


class Peer:
    """Collects what the Dispatcher sends, in order."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()

    async def send(self, type_: str, id_: str, payload: msgspec.Struct | None) -> None:
        await self.sent.put((type_, id_, payload))

    async def next(self) -> tuple[str, str, Any]:
        return await asyncio.wait_for(self.sent.get(), 5)


def prepare(environment: str, directory: Path, read_only: bool) -> wire.ExecutionPrepare:
    return wire.ExecutionPrepare(
        session_id="s",
        configuration=wire.ExecutionConfiguration(
            agent_kind="scripted",
            agent_options=wire.AgentOptions(model="scripted"),
            execution_controls=wire.ExecutionControls(
                web_search="disabled",
                text_verbosity="medium",
                disable_programmatic_tool_calling=True,
            ),
            local_environment=wire.LocalEnvironment(
                id=environment, type="self_hosted", workspace_directory=str(directory)
            ),
            workspace_read_only=read_only,
        ),
    )


def scripted_dispatcher(peer: Peer, root: Path) -> Dispatcher:
    """A dispatcher of the scripted harness that replies to `peer`, binding workspaces
    under `root`."""
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    return Dispatcher(harnesses, peer.send, workspaces=Workspaces(None, allowed_roots=(root,)))


def test_quiesce_fences_new_work_until_the_matching_resume(tmp_path: Path) -> None:
    async def main() -> None:
        peer = Peer()
        dispatcher = scripted_dispatcher(peer, tmp_path)
        env, other = str(uuid.uuid4()), str(uuid.uuid4())

        async def call(type_: str, id_: str, payload: msgspec.Struct) -> tuple[str, str, Any]:
            await dispatcher.handle(Frame(type_, id_, payload, ""))
            return await peer.next()

        quiesce = EnvironmentQuiesce(environment_id=env, suspend_id="sus-1")
        kind, _, reply = await call("environment_quiesce", "q1", quiesce)
        assert (kind, reply.accepted) == ("environment_quiesced", True)

        _, _, status = await call("execution_prepare", "p1", prepare(env, tmp_path, True))
        assert (status.state, status.error_code) == ("rejected", "resource_unavailable")

        # Another Environment keeps working.
        _, _, status = await call("execution_prepare", "p2", prepare(other, tmp_path, True))
        assert status.state == "ready"

        wrong = EnvironmentResume(environment_id=env, suspend_id="sus-2")
        _, _, reply = await call("environment_resume", "r1", wrong)
        assert (reply.accepted, reply.error_code) == (False, "not_suspended")
        right = EnvironmentResume(environment_id=env, suspend_id="sus-1")
        _, _, reply = await call("environment_resume", "r2", right)
        assert reply.accepted

        # A held read-only preparation makes the Environment busy.
        _, _, status = await call("execution_prepare", "p3", prepare(env, tmp_path, True))
        assert status.state == "ready"
        _, _, reply = await call(
            "environment_quiesce", "q2", EnvironmentQuiesce(environment_id=env, suspend_id="sus-3")
        )
        assert (reply.accepted, reply.error_code) == (False, "resource_busy")

        # Resuming an Environment that was never quiesced is a no-op.
        _, _, reply = await call(
            "environment_resume",
            "r3",
            EnvironmentResume(environment_id=str(uuid.uuid4()), suspend_id="x"),
        )
        assert reply.accepted
        await dispatcher.close()

    asyncio.run(main())


def test_a_request_still_unserved_when_the_connection_closes_leaves_nothing_unawaited(
    tmp_path: Path,
) -> None:
    """A request whose task is cancelled before it started (the connection closed at
    once) is dropped whole: no coroutine is left never awaited (a RuntimeWarning in the
    log, two lines where the log is one line per event)."""

    async def main() -> None:
        peer = Peer()
        dispatcher = scripted_dispatcher(peer, tmp_path)
        quiesce = EnvironmentQuiesce(environment_id=str(uuid.uuid4()), suspend_id="sus-1")
        await dispatcher.handle(Frame("environment_quiesce", "q1", quiesce, ""))
        assert await dispatcher.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
