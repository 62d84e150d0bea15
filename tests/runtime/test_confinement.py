"""Real confinement on this host: a confined command reaches its workspace, a private
temporary directory and the read-only system directories, and nothing else. These run
the actual launcher (Landlock through system calls) on the kernel the tests run on."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.confinement import (
    BUBBLEWRAP,
    LANDLOCK,
    NONE,
    Confinement,
    ConfinementError,
    Sandbox,
    landlock_abi,
    probe,
    unbundled,
)

landlock = pytest.mark.skipif(landlock_abi() == 0, reason="the kernel has no Landlock")


def run(sandbox: Sandbox, workspace: Path, command: str) -> subprocess.CompletedProcess[str]:
    with sandbox.command(["/bin/sh", "-c", command], workspace, os.environ) as (argv, env):
        return subprocess.run(
            argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=60, check=False
        )


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    data, workspace, outside = tmp_path / "data", tmp_path / "ws", tmp_path / "outside"
    for path in (data / "secrets", workspace, outside):
        path.mkdir(parents=True)
    (data / "secrets" / "core.key").write_text("the-core-key")
    (outside / "note.txt").write_text("outside")
    return data, workspace, outside


def test_the_probe_names_what_this_host_offers() -> None:
    found = probe()
    assert found.kind in (LANDLOCK, BUBBLEWRAP, NONE)
    if landlock_abi() > 0:
        assert found == Confinement(LANDLOCK, landlock_abi())
        assert found.describe() == {"kind": "landlock", "abi": landlock_abi()}


@landlock
def test_a_confined_command_works_in_its_workspace(places: tuple[Path, Path, Path]) -> None:
    data, workspace, _ = places
    sandbox = Sandbox(Confinement(LANDLOCK, landlock_abi()), (data,))
    done = run(sandbox, workspace, "echo hi > out.txt && cat out.txt && ls /usr >/dev/null")
    assert (done.returncode, done.stdout) == (0, "hi\n"), done.stderr
    done = run(sandbox, workspace, "python3 -c 'print(6 * 7)'")
    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
    done = run(sandbox, workspace, 'echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"')
    assert (done.returncode, done.stdout) == (0, "tmp\n"), done.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"


@landlock
def test_a_confined_command_has_the_default_signal_dispositions(
    places: tuple[Path, Path, Path],
) -> None:
    """The launcher is Python, which ignores SIGPIPE; a command must not inherit that, or
    `yes | head` makes `yes` print "Broken pipe" instead of ending quietly."""
    data, workspace, _ = places
    sandbox = Sandbox(Confinement(LANDLOCK, landlock_abi()), (data,))
    done = run(sandbox, workspace, "yes | head -n 1")
    assert (done.returncode, done.stdout, done.stderr) == (0, "y\n", "")


@landlock
def test_a_confined_command_reaches_nothing_else(places: tuple[Path, Path, Path]) -> None:
    data, workspace, outside = places
    sandbox = Sandbox(Confinement(LANDLOCK, landlock_abi()), (data,))
    key = data / "secrets" / "core.key"
    for command in (
        f"cat {key}",
        f"ls {data}",
        f"cat {outside}/note.txt",
        f"echo x > {outside}/planted.txt",
        f"echo x > {data}/planted.txt",
        f"ln -s {key} link && cat link",
        f"ln {key} hard && cat hard",
        f"cp {key} copy.txt",
        f"python3 -c 'open(\"{key}\").read()'",
    ):
        done = run(sandbox, workspace, command)
        assert done.returncode != 0, command
        assert "the-core-key" not in done.stdout
    assert not (outside / "planted.txt").exists() and not (data / "planted.txt").exists()
    assert not (workspace / "copy.txt").exists()


@landlock
def test_a_confined_command_cannot_signal_the_runtime(places: tuple[Path, Path, Path]) -> None:
    if landlock_abi() < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    _, workspace, _ = places
    sandbox = Sandbox(Confinement(LANDLOCK, landlock_abi()))
    done = run(sandbox, workspace, f"kill -0 {os.getpid()}")
    assert done.returncode != 0
    done = run(sandbox, workspace, "sleep 5 & kill -0 $! && kill $!")
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bubblewrap_confines_where_it_runs(places: tuple[Path, Path, Path]) -> None:
    data, workspace, outside = places
    sandbox = Sandbox(Confinement(BUBBLEWRAP), (data,))
    usable = run(sandbox, workspace, "true")
    if usable.returncode != 0:
        pytest.skip(f"bubblewrap cannot create namespaces here: {usable.stderr.strip()}")
    done = run(sandbox, workspace, "echo hi > out.txt && python3 -c 'print(6 * 7)' && ls /usr")
    assert done.returncode == 0 and done.stdout.startswith("42\n"), done.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"
    for command in (f"cat {data}/secrets/core.key", f"echo x > {outside}/planted.txt"):
        done = run(sandbox, workspace, command)
        assert done.returncode != 0 and "the-core-key" not in done.stdout, command
    assert not (outside / "planted.txt").exists()


def test_unconfined_commands_are_refused_unless_allowed(places: tuple[Path, Path, Path]) -> None:
    _, workspace, _ = places
    with (
        pytest.raises(ConfinementError),
        Sandbox(Confinement(NONE)).command(["/bin/true"], workspace, {}),
    ):
        pass
    done = run(Sandbox(Confinement(NONE), unconfined_allowed=True), workspace, "echo ran")
    assert done.stdout == "ran\n"


def test_a_system_directory_holding_a_denied_path_is_not_granted(tmp_path: Path) -> None:
    sandbox = Sandbox(Confinement(LANDLOCK, 7), (Path("/etc/corebox-data"),))
    rules = sandbox.rules(tmp_path, tmp_path / "tmp")
    assert "/etc" not in rules.readable
    assert "/usr" in rules.readable or not Path("/usr").is_dir()


@contextlib.contextmanager
def listener() -> Iterator[int]:
    """A loopback TCP listener; its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


CONNECT = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)'"


@landlock
def test_a_sandbox_without_network_refuses_tcp(places: tuple[Path, Path, Path]) -> None:
    if landlock_abi() < 4:
        pytest.skip("network rules need Landlock ABI 4")
    _, workspace, _ = places
    sandbox = Sandbox(Confinement(LANDLOCK, landlock_abi()))
    with listener() as port:
        assert run(sandbox, workspace, CONNECT.format(port=port)).returncode == 0
        done = run(sandbox.without_network(), workspace, CONNECT.format(port=port))
    assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr
    # Files are confined as before.
    assert run(sandbox.without_network(), workspace, "echo ok > f && cat f").stdout == "ok\n"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bubblewrap_without_network_has_no_network(places: tuple[Path, Path, Path]) -> None:
    _, workspace, _ = places
    sandbox = Sandbox(Confinement(BUBBLEWRAP)).without_network()
    usable = run(sandbox, workspace, "true")
    if usable.returncode != 0:
        pytest.skip(f"bubblewrap cannot create namespaces here: {usable.stderr.strip()}")
    with listener() as port:
        done = run(sandbox, workspace, CONNECT.format(port=port))
    assert done.returncode != 0


def test_a_command_started_by_the_binary_gets_its_environment_without_the_loaders_part() -> None:
    """The one-file binary's loader puts its unpacked libraries in `LD_LIBRARY_PATH` and
    its bookkeeping in `_PYI_*` for its own Python; a command run through the launcher
    gets neither, and an `LD_LIBRARY_PATH` of its own back."""
    loaded = {
        "PATH": "/usr/bin",
        "LD_LIBRARY_PATH": "/tmp/corebox-command-x/_MEIabc:/opt/lib",
        "LD_LIBRARY_PATH_ORIG": "/opt/lib",
        "_PYI_ARCHIVE_FILE": "/usr/local/bin/corebox",
        "_PYI_APPLICATION_HOME_DIR": "/tmp/corebox-command-x/_MEIabc",
        "_MEIPASS2": "/tmp/corebox-command-x/_MEIabc",
    }
    assert unbundled(loaded, frozen=True) == {"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/opt/lib"}
    del loaded["LD_LIBRARY_PATH_ORIG"]
    assert unbundled(loaded, frozen=True) == {"PATH": "/usr/bin"}
    assert unbundled(loaded, frozen=False) == loaded  # from source no loader added anything
