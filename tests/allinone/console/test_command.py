"""`corebox console` against a real server: its address when the console answers there, a
clear error when nothing does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, Server, free_port


def corebox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_the_address_of_a_running_console(server: Server) -> None:
    done = corebox("console", "--url", server.base_url, "--data-dir", str(server.data_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"corebox console: {server.base_url}/"
    assert str(server.data_dir / "secrets" / "core.key") in done.stdout


def test_the_apis_address_names_its_server(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The banner's OPENAI_BASE_URL (the server's address and /v1) is the server's."""
    done = corebox("console", "--url", f"{server.base_url}/v1", "--data-dir", str(server.data_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"corebox console: {server.base_url}/"
    monkeypatch.setenv("COREBOX_URL", f"{server.base_url}/v1/")
    listed = corebox("projects", "list", "--data-dir", str(server.data_dir))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("proj_")


def test_an_address_that_does_not_serve_the_console_says_so(server: Server) -> None:
    done = corebox("console", "--url", f"{server.base_url}/elsewhere")
    assert (done.returncode, done.stdout) == (1, "")
    said = f"{server.base_url}/elsewhere/ does not serve the corebox console (HTTP 404)"
    assert done.stderr == f"corebox: error: {said}\n"


def test_says_so_when_nothing_answers() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = corebox("console", "--url", url)
    assert done.returncode == 1
    assert "start it with `corebox serve`" in done.stderr and done.stdout == ""
