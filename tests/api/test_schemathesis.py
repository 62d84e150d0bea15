"""Schemathesis over `/openapi.json` against a real `corebox serve`: no route answers 5xx.

Every route is exercised with a project key (fuzzing, then stateful scenarios that
follow the document's links from each create to the routes of what it created) and
with the Core key (fuzzing). Generation is deterministic and small, so the run is
repeatable and bounded on a shared two-core machine. A wider run of the same shape:

    st run http://127.0.0.1:8800/openapi.json -c not_a_server_error \\
        -H "Authorization: Bearer $KEY" -H "OpenAI-Beta: agents=v1" \\
        --generation-deterministic --phases coverage,fuzzing,stateful -n 20
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import core_key
from tests.conftest import API_KEY, Server, start_server


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_server(tmp_path_factory.mktemp("schemathesis") / "data")
    yield server
    server.stop()


CONFIG = """
[generation]
deterministic = true
max-examples = {examples}

[phases.stateful]
max-steps = 20

[phases.stateful.generation]
max-examples = {scenarios}
"""


def schemathesis(
    server: Server, key: str, *, phases: str, examples: int, cwd: Path, scenarios: int = 1
) -> subprocess.CompletedProcess[str]:
    config = cwd / "schemathesis.toml"
    config.write_text(CONFIG.format(examples=examples, scenarios=scenarios), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{server.base_url}/openapi.json",
        "--checks",
        "not_a_server_error",
        "--header",
        f"Authorization: Bearer {key}",
        "--header",
        "OpenAI-Beta: agents=v1",
        "--phases",
        phases,
        "--no-shrink",
        "--workers",
        "1",
        "--continue-on-failure",
        "--request-timeout",
        "30",
        "--warnings",
        "off",
        "--no-color",
        # A drain stops the server claiming work for good (readiness then answers 503
        # `draining`, as it must); it has its own tests (test_drain.py).
        "--exclude-path",
        "/core/v1/drain",
    ]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=170)


def _report(run: subprocess.CompletedProcess[str]) -> str:
    return (run.stdout + run.stderr)[-6000:]


def test_no_route_answers_5xx_with_a_project_key(target: Server, tmp_path: Path) -> None:
    run = schemathesis(
        target, API_KEY, phases="fuzzing,stateful", examples=3, scenarios=20, cwd=tmp_path
    )
    assert run.returncode == 0, _report(run)
    assert "Scenarios:" in run.stdout and "passed" in run.stdout, _report(run)


def test_no_route_answers_5xx_with_the_core_key(target: Server, tmp_path: Path) -> None:
    key = core_key(target.data_dir)
    run = schemathesis(target, key, phases="fuzzing", examples=2, cwd=tmp_path)
    assert run.returncode == 0, _report(run)
    assert "passed" in run.stdout, _report(run)
