"""The runnable examples work against a real server, as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import API_KEY, ROOT, Server

EXAMPLES = ROOT / "examples"


def run_example(server: Server, name: str, *args: str) -> str:
    env = {**os.environ, "COREBOX_API_KEY": API_KEY, "COREBOX_BASE_URL": f"{server.base_url}/v1"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("quickstart.py", "Hello from corebox!\nand again\n"),
        ("function_tools.py", 'Paris: {"city":"Paris","forecast":"sunny","temp_c":21}\n'),
        (
            "skills_and_subagents.py",
            "skill greeting version 1\n"
            "The subagent answered: Say hello, then the name.\n"
            "subagent-1: closed, 1 turn(s)\n",
        ),
    ],
)
def test_example_prints_its_answer(server: Server, name: str, expected: str) -> None:
    assert run_example(server, name) == expected


def test_workspace_example_reads_back_its_artifact(server: Server, tmp_path: Path) -> None:
    output = run_example(server, "workspace_artifacts.py", str(tmp_path))
    assert output == "/workspace/outputs/report.txt (20 bytes): All systems nominal.\n"
    assert (tmp_path / "outputs" / "report.txt").read_text() == "All systems nominal."
