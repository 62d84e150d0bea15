"""Conversation continuity when only the Runtime restarts: Core stays up, `corebox
daemon` is killed (-9) and started again, and the builtin session's next turn still
carries the earlier turn, rebuilt from Core's committed items on the new Executor."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.test_remote_runtime import (
    WAIT,
    new_device,
    sdk,
    serve_core_only,
    start_daemon,
)
from tests.support.model_server import MODEL, ModelServer, Reply


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def test_a_daemon_restart_keeps_the_conversation(tmp_path: Path, model: ModelServer) -> None:
    data_dir = tmp_path / "data"
    model.queue(Reply.say("Hello Ada."), Reply.say("Ada."))
    with serve_core_only(data_dir) as base_url, sdk(base_url) as client:
        device = new_device(base_url, data_dir, "elsewhere")
        first = start_daemon(base_url, device["file"])
        try:
            events = list(
                client.beta.agents.sessions.create(
                    agent={"model": MODEL},
                    environment={"type": "none"},
                    input="my name is Ada",
                    stream=True,
                    extra_body={
                        "x_corebox": {
                            "model_provider": {
                                "protocol": "chat_completions",
                                "base_url": model.base_url,
                                "api_key": "sk-model-secret-0123456789",
                            }
                        }
                    },
                )
            )
            session_id = str(events[0].session.id)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=WAIT)
            if first.stderr is not None:
                first.stderr.close()
        second = start_daemon(base_url, device["file"])
        try:
            with client.beta.agents.sessions.stream(session_id, input="who am I?") as stream:
                result = stream.get_final_result()  # waits until the new daemon declared
            assert result.turn.status == "completed"
        finally:
            second.terminate()
            second.wait(timeout=WAIT)
            if second.stderr is not None:
                second.stderr.close()
        turn = client.beta.agents.sessions.turns.retrieve(result.turn.id, session_id=session_id)
        assert turn.x_corebox["context"]["rebuilt"] is True  # type: ignore[attr-defined]
    assert [(m["role"], m["content"]) for m in model.requests[1].body["messages"]] == [
        ("user", "my name is Ada"),
        ("assistant", "Hello Ada."),
        ("user", "who am I?"),
    ]
