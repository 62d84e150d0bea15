"""`corebox sessions fork|rewind` against a real server, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from openai import OpenAI

from tests.conftest import API_KEY, ROOT, Server


def cli(
    server: Server, *args: str, keys: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`corebox sessions ARGS` with `keys` in its environment (by default COREBOX_API_KEY)."""
    return subprocess.run(
        [sys.executable, "-m", "allinone", "sessions", *args,
         "--data-dir", str(server.data_dir), "--url", server.base_url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
             **({"COREBOX_API_KEY": API_KEY} if keys is None else keys)},
    )  # fmt: skip


def test_fork_and_rewind_from_the_command_line(server: Server) -> None:
    with OpenAI(base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=0) as client:
        events = list(
            client.beta.agents.sessions.create(
                agent={"model": "scripted"}, environment={"type": "none"}, input="one", stream=True
            )
        )
        session_id = str(events[0].session.id)
        with client.beta.agents.sessions.stream(session_id, input="two") as stream:
            second = stream.get_final_result().turn.id
        first = client.beta.agents.sessions.turns.list(session_id, order="asc").data[0].id

        forked = cli(server, "fork", session_id, "--turn-id", first)
        assert forked.returncode == 0, forked.stderr
        fork_id, described = forked.stdout.strip().split("\t")
        assert described == f"forked from {session_id} at {first}"
        assert len(client.beta.agents.sessions.items.list(fork_id).data) == 2

        rewound = cli(server, "rewind", session_id, "--json")
        assert rewound.returncode == 0, rewound.stderr
        assert json.loads(rewound.stdout)["hidden_turn_ids"] == [second]
        session = client.beta.agents.sessions.retrieve(session_id)
        assert session.x_corebox["hidden_turn_ids"] == [second]  # type: ignore[attr-defined]

    missing = cli(server, "fork", "sess_missing")
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr
    refused = cli(server, "rewind", session_id, "--turns", "5")
    assert refused.returncode == 1 and "HTTP 400" in refused.stderr
    zero = cli(server, "rewind", session_id, "--turns", "0")
    assert (zero.returncode, zero.stdout) == (1, "")
    assert zero.stderr == (
        "corebox: error: the server refused: Invalid request: Expected `int` >= 1."
        " Field: turns. (HTTP 400)\n"
    )


def test_the_key_the_banner_exports_for_this_server_is_used(server: Server) -> None:
    """With only the banner's `export` line, the command acts with that key; an
    OPENAI_API_KEY meant for another server is not sent to this one."""
    here = {"OPENAI_BASE_URL": f"{server.base_url}/v1", "OPENAI_API_KEY": API_KEY}
    missing = cli(server, "fork", "sess_missing", keys=here)
    assert (missing.returncode, missing.stderr) == (
        1,
        "corebox: error: the server refused: Resource not found. Field: session_id. (HTTP 404)\n",
    )
    elsewhere = {"OPENAI_BASE_URL": "https://api.example.com/v1", "OPENAI_API_KEY": API_KEY}
    unused = cli(server, "fork", "sess_missing", keys=elsewhere)
    assert (unused.returncode, unused.stderr) == (
        1,
        "corebox: error: no project API key: use --api-key-file or set COREBOX_API_KEY"
        f" (there is no {server.data_dir / 'default-project.key'})\n",
    )
