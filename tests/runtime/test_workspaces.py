"""The Runtime's own workspace rules, whatever Core sends: bindings only under the allowed
roots and never in or around a denied path or the managed workspaces; no `..`, absolute
path or symlink followed for reads, writes, listings and exports."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from runtime.operations import WorkspaceOperations
from runtime.proto.transfers import TransferOutcome, TransferStep
from runtime.proto.writes import WorkspaceWrite
from runtime.workspaces import (
    Binding,
    WorkspaceError,
    Workspaces,
    export_outputs,
    list_directory,
    read_bytes,
    replace_file,
    write_file,
    write_new_file,
)


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "data": tmp_path / "data",
        "managed": tmp_path / "data" / "workspaces",
        "root": tmp_path / "home",
        "ws": tmp_path / "home" / "project",
        "outside": tmp_path / "elsewhere",
    }
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    (paths["data"] / "core.key").write_text("secret")
    return paths


def workspaces(layout: dict[str, Path]) -> Workspaces:
    return Workspaces(layout["managed"], (layout["root"], layout["data"]), (layout["data"],))


def test_self_hosted_bindings_stay_under_the_allowed_roots(layout: dict[str, Path]) -> None:
    served = workspaces(layout)
    assert served.bind("e1", "self_hosted", str(layout["ws"])).root == layout["ws"].resolve()
    (layout["ws"] / "to-data").symlink_to(layout["data"])
    refused = [
        "/",
        str(layout["outside"]),
        str(layout["data"]),
        str(layout["managed"]),
        str(layout["ws"] / "to-data"),
        str(layout["ws"] / ".." / "project"),
        "relative",
        "",
    ]
    for index, directory in enumerate(refused):
        with pytest.raises(WorkspaceError) as caught:
            served.bind(f"x{index}", "self_hosted", directory)
        assert caught.value.code == "invalid_configuration", directory
    # The data directory is refused even inside an allowed root (here it is one).
    other = served.bind("m1", "openai_hosted", "")
    with pytest.raises(WorkspaceError):
        served.bind("x-managed", "self_hosted", str(other.root))
    with pytest.raises(WorkspaceError):
        Workspaces(None).bind("e2", "self_hosted", str(layout["ws"]))


def test_allowed_roots_may_change_between_bindings(layout: dict[str, Path]) -> None:
    roots: list[Path] = []
    served = Workspaces(None, lambda: roots)
    with pytest.raises(WorkspaceError):
        served.bind("e1", "self_hosted", str(layout["ws"]))
    roots.append(layout["root"])
    served.bind("e1", "self_hosted", str(layout["ws"]))


def test_paths_never_leave_the_workspace(layout: dict[str, Path]) -> None:
    binding = Binding("e", "self_hosted", layout["ws"].resolve())
    (layout["ws"] / "leak").symlink_to(layout["data"] / "core.key")
    (layout["ws"] / "data").symlink_to(layout["data"])
    (layout["outside"] / "x.txt").write_text("outside")
    for path in (
        "leak",
        "data/core.key",
        "../elsewhere/x.txt",
        "a/../../elsewhere/x.txt",
        str(layout["outside"] / "x.txt"),
        "/workspace/../elsewhere/x.txt",
    ):
        with pytest.raises(WorkspaceError):
            read_bytes(binding, path, 100)
        with pytest.raises(WorkspaceError):
            write_new_file(binding, path + "/new", b"x")
        with pytest.raises(WorkspaceError):
            replace_file(binding, path, b"x")
    for path in ("data", "../", str(layout["data"])):
        with pytest.raises(WorkspaceError):
            list_directory(binding, path, 10)
    assert (layout["data"] / "core.key").read_text() == "secret"
    assert not list(layout["data"].rglob("new"))
    write_new_file(binding, "/workspace/notes/a.txt", b"mine")
    assert read_bytes(binding, "notes/a.txt", 100) == (b"mine", False)
    replace_file(binding, "notes/a.txt", b"again")
    assert (layout["ws"] / "notes" / "a.txt").read_bytes() == b"again"


def test_exports_skip_symlinks(layout: dict[str, Path]) -> None:
    binding = Binding("e", "self_hosted", layout["ws"].resolve())
    outputs = layout["ws"] / "outputs"
    outputs.mkdir()
    (outputs / "real.txt").write_text("mine")
    (outputs / "key.txt").symlink_to(layout["data"] / "core.key")
    (outputs / "all").symlink_to(layout["data"])
    with tarfile.open(fileobj=io.BytesIO(export_outputs(binding))) as archive:
        assert archive.getnames() == ["outputs/real.txt"]


def test_names_up_to_255_bytes_are_written(layout: dict[str, Path]) -> None:
    binding = Binding("e", "self_hosted", layout["ws"].resolve())
    name = "n" * 255
    write_new_file(binding, f"deep/{name}", b"longest")
    assert (layout["ws"] / "deep" / name).read_bytes() == b"longest"
    assert sorted(p.name for p in (layout["ws"] / "deep").iterdir()) == [name]


def test_a_path_the_file_system_cannot_hold_is_a_definite_refusal(
    layout: dict[str, Path],
) -> None:
    """The OS refuses the name before anything is written: a WorkspaceError (the write
    certainly did not happen), not an OSError, and no directory is left behind."""
    binding = Binding("e", "self_hosted", layout["ws"].resolve())
    for relative in ("b" * 256, "new/" + "b" * 256, "/".join(["d" * 250] * 17)):
        with pytest.raises(WorkspaceError) as caught:
            write_new_file(binding, relative, b"x")
        assert caught.value.code == "write_rejected", relative[:20]
        assert list(layout["ws"].iterdir()) == [], relative[:20]


def test_a_refused_name_is_rejected_on_the_wire_and_blocks_nothing(
    layout: dict[str, Path],
) -> None:
    environment = "0b7d1c52-6f6e-4c1e-9d43-5f1a8f1f2a01"
    served = workspaces(layout)
    served.bind(environment, "self_hosted", str(layout["ws"]))
    operations = WorkspaceOperations(served, lambda _handle, _run: None)

    def write(mutation_id: str, path: str) -> list[tuple[TransferOutcome, str]]:
        begin = WorkspaceWrite(
            step=TransferStep.BEGIN,
            environment_id=environment,
            session_id="6a1e3f0c-8d52-4b7e-a1c9-2e4f5d6a7b02",
            path=path,
            size_bytes=2,
            sha256=hashlib.sha256(b"OK").hexdigest(),
        )
        steps = [begin, WorkspaceWrite(step=TransferStep.CHUNK, data=b"OK")]
        steps.append(WorkspaceWrite(step=TransferStep.COMMIT))
        results = [operations.write(mutation_id, step) for step in steps]
        return [(r.outcome, r.error_code) for r in results if r is not None]

    refused = write("m1", "b" * 256)
    assert refused[-1] == (TransferOutcome.REJECTED, "write_rejected")
    assert not operations.writing(environment)
    assert write("m2", "ok.txt")[-1] == (TransferOutcome.COMPLETED, "")
    assert [p.name for p in layout["ws"].iterdir()] == ["ok.txt"]


def test_a_write_replaces_a_regular_file_and_nothing_else(layout: dict[str, Path]) -> None:
    """`write_file` (a `workspace_write`'s commit) renames its staged bytes over a
    regular file; a symlink, a directory or a FIFO at the path is refused and left as it
    was, and no staging file stays behind."""
    binding = Binding("e", "self_hosted", layout["ws"].resolve())
    ws = layout["ws"]
    (ws / "notes.txt").write_bytes(b"old")
    write_file(binding, "/workspace/notes.txt", b"new bytes")
    assert (ws / "notes.txt").read_bytes() == b"new bytes"
    write_file(binding, "fresh/deep.txt", b"made")  # parents made, as for a new file
    assert (ws / "fresh" / "deep.txt").read_bytes() == b"made"
    (ws / "link").symlink_to(layout["data"] / "core.key")
    (ws / "folder").mkdir()
    os.mkfifo(ws / "pipe")
    refused = {
        "link": ("permission_denied", ""),  # refused by `resolve`, as for every path
        "folder": ("write_rejected", "destination_directory"),
        "pipe": ("write_rejected", "unsafe_destination"),
    }
    for name, why in refused.items():
        with pytest.raises(WorkspaceError) as caught:
            write_file(binding, name, b"x")
        assert (caught.value.code, caught.value.reason) == why, name
    assert (layout["data"] / "core.key").read_text() == "secret"
    assert (ws / "link").is_symlink() and list((ws / "folder").iterdir()) == []
    assert sorted(p.name for p in ws.iterdir()) == ["folder", "fresh", "link", "notes.txt", "pipe"]
    with pytest.raises(WorkspaceError):  # a new file still never replaces one
        write_new_file(binding, "notes.txt", b"x")
    assert (ws / "notes.txt").read_bytes() == b"new bytes"
