"""`corebox environments wait|show` against a real server: a progress bar on a terminal,
only the outcome through a pipe, and the exit code of the set-up's end."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from allinone import environments_cli, run_control
from allinone.admin import request_json
from allinone.cli import main as corebox
from allinone.core.gateway.workspace_rules import wire_uuid
from allinone.datadir.collection import WORKSPACES_DIR
from tests.api.support import http
from tests.conftest import API_KEY, ROOT, Server
from tests.support.wheels import HOLD, hosted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def create(server: Server, spec: dict[str, Any]) -> str:
    owner = {"Authorization": f"Bearer {API_KEY}", **run_control.BETA}
    status, body, _ = http(
        server.base_url, "POST", "/v1/agents/environments", {"environment": spec}, owner
    )
    assert status == 200, body
    return str(body["id"])


def cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "allinone",
            "environments",
            *args,
            "--url",
            server.base_url,
            "--api-key",
            API_KEY,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_wait_draws_each_step_on_a_terminal_and_ends_with_the_outcome(server: Server) -> None:
    environment_id = create(server, hosted(["alpha_pkg", "beta_pkg"], [HOLD]))
    url = f"{server.base_url}/v1/agents/environments/{environment_id}"
    release = server.data_dir / WORKSPACES_DIR / wire_uuid(environment_id) / "release"

    def fetch() -> dict[str, Any]:
        environment: dict[str, Any] = request_json(url, API_KEY, "GET", None, run_control.BETA)
        if (environment["x_corebox"]["setup"] or {}).get("phase") == "running_setup":
            release.touch()  # seen held at its setup command: let it finish
        return environment

    out, err = io.StringIO(), Terminal()
    assert environments_cli.wait(fetch, out, err, timeout=120, poll=0.05) == 0
    assert out.getvalue() == f"{environment_id} ready\n"
    assert "set-up: running setup commands [" in err.getvalue()
    assert "0/1" in err.getvalue()
    assert err.getvalue().endswith("\n")


def test_wait_through_a_pipe_prints_only_the_outcome_and_its_exit_code(server: Server) -> None:
    ready = create(server, hosted(["alpha_pkg"], []))
    done = cli(server, "wait", ready)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{ready} ready\n", "")
    spec = hosted([], [])
    spec["setup_commands"] = [{"command": "exit 4"}]
    failed = create(server, spec)
    result = cli(server, "wait", failed)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"{failed} failed: ")
    assert "exit 4" in result.stdout
    assert result.stderr == ""
    shown = cli(server, "show", failed)
    assert shown.stdout == result.stdout


@pytest.mark.parametrize("given", ["-5", "0", "nan", "soon"])
def test_a_timeout_that_is_not_more_than_0_seconds_is_refused(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        corebox(["environments", "wait", "env_x", "--timeout", given])
    assert stopped.value.code == 2
    said = f"argument --timeout: must be a number of seconds more than 0, not {given!r}"
    assert capsys.readouterr().err.endswith(f"corebox environments wait: error: {said}\n")


def test_help_and_readme_give_the_exit_status_of_a_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        corebox(["environments", "wait", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 ready, 1 failed, 2 when the timeout passes" in shown
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "2 when --timeout (default 1800 s) passes or no server answers" in readme
