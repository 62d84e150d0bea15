"""The runnable examples work against a real server, as a user would run them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import API_KEY, ROOT, Server

EXAMPLES = ROOT / "examples"


# The variables the examples read a key or an address from (`examples/connection.py`).
CONNECTION = (
    "COREBOX_API_KEY",
    "COREBOX_BASE_URL",
    "COREBOX_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


def run_example(server: Server, name: str, *args: str) -> str:
    env = {"COREBOX_API_KEY": API_KEY, "COREBOX_BASE_URL": f"{server.base_url}/v1"}
    done = start(name, args, env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def start(
    name: str, args: tuple[str, ...], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run an example with `env` as its only connection variables."""
    inherited = {key: value for key, value in os.environ.items() if key not in CONNECTION}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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


def test_examples_use_the_variables_the_banner_exports(server: Server, tmp_path: Path) -> None:
    # The banner's `next` line: `export OPENAI_BASE_URL=... OPENAI_API_KEY=...`.
    env = {
        "OPENAI_BASE_URL": f"{server.base_url}/v1",
        "OPENAI_API_KEY": API_KEY,
        "XDG_DATA_HOME": str(tmp_path),  # no saved key file to fall back on
    }
    done = start("quickstart.py", (), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from corebox!\nand again\n"


@pytest.mark.parametrize(
    "address", [("OPENAI_BASE_URL", "/v1"), ("COREBOX_URL", ""), ("COREBOX_BASE_URL", "/v1")]
)
def test_a_corebox_key_goes_to_the_address_the_environment_names(
    server: Server, address: tuple[str, str]
) -> None:
    # With COREBOX_API_KEY set (as the README's messaging walk-through exports it), the
    # address still comes from what the shell says: the banner's OPENAI_BASE_URL, or
    # COREBOX_URL as the corebox commands take it, not a default port.
    name, suffix = address
    env = {"COREBOX_API_KEY": API_KEY, name: f"{server.base_url}{suffix}"}
    done = start("quickstart.py", (), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from corebox!\nand again\n"


def test_examples_find_the_key_the_first_start_saved(server: Server, tmp_path: Path) -> None:
    (tmp_path / "corebox").mkdir()
    (tmp_path / "corebox" / "default-project.key").write_text(API_KEY + "\n")
    env = {"COREBOX_BASE_URL": f"{server.base_url}/v1", "XDG_DATA_HOME": str(tmp_path)}
    done = start("quickstart.py", (), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from corebox!\nand again\n"


@pytest.mark.parametrize("name", ["quickstart.py", "function_tools.py", "skills_and_subagents.py"])
def test_an_example_without_a_key_says_how_to_give_one(name: str, tmp_path: Path) -> None:
    done = start(name, (), {"XDG_DATA_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert done.stdout == ""
    assert "OPENAI_BASE_URL" in done.stderr and "COREBOX_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_workspace_example_without_a_key_leaves_no_directory(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    done = start("workspace_artifacts.py", (str(directory),), {"XDG_DATA_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "COREBOX_API_KEY" in done.stderr
    assert not directory.exists()


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("quickstart.py", ()),
        ("function_tools.py", ()),
        ("skills_and_subagents.py", ()),
        ("workspace_artifacts.py", ("demo",)),  # its directory, under `tmp_path`
    ],
)
def test_an_example_with_no_server_says_to_start_one(
    name: str, args: tuple[str, ...], tmp_path: Path
) -> None:
    # A port that is bound but not listening: nothing answers there, and nothing can
    # start answering while the test holds it.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        env = {"COREBOX_API_KEY": API_KEY, "COREBOX_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        done = start(name, tuple(str(tmp_path / arg) for arg in args), env)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"corebox is not answering at http://127.0.0.1:{port}: start it with `make run`"
        " (or `corebox serve`) and run this again\n"
    )


def test_the_workspace_example_outside_the_granted_roots_says_why(server: Server) -> None:
    # The test server grants the test run's temporary tree; a directory made by
    # `tempfile` lies outside it.
    with tempfile.TemporaryDirectory() as outside:
        env = {"COREBOX_API_KEY": API_KEY, "COREBOX_BASE_URL": f"{server.base_url}/v1"}
        done = start("workspace_artifacts.py", (outside,), env)
        assert not os.listdir(outside)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "corebox answered 400: workspace_directory is outside the directories this project"
        " may use; the server's owner grants them (corebox projects grant-root).\n"
    )
