"""Workspace snapshots on a real filesystem: immutable trees that link unchanged files
from the previous snapshot, bounded retention, and seeding a new workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.proto.execution import WorkspaceSeed
from runtime.snapshots import SnapshotError, Snapshots
from runtime.workspaces import WorkspaceError, Workspaces


def tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_snapshot_links_unchanged_files_and_copies_changed_ones(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    tree(workspace, {"same.txt": "same", "sub/changed.txt": "v1"})
    os.symlink("same.txt", workspace / "link")
    snapshots = Snapshots(tmp_path / "snapshots")
    first = snapshots.take(workspace, "env", "turn_1")
    (workspace / "sub" / "changed.txt").write_text("v2 longer")
    second = snapshots.take(workspace, "env", "turn_2")
    assert (first / "sub" / "changed.txt").read_text() == "v1"  # immutable
    assert (second / "sub" / "changed.txt").read_text() == "v2 longer"
    assert os.stat(first / "same.txt").st_ino == os.stat(second / "same.txt").st_ino
    assert os.stat(workspace / "same.txt").st_ino != os.stat(first / "same.txt").st_ino
    assert os.readlink(second / "link") == "same.txt"
    # An in-place change of the workspace never reaches a snapshot.
    with open(workspace / "same.txt", "a") as handle:
        handle.write("!")
    assert (second / "same.txt").read_text() == "same"


def test_only_the_most_recent_snapshots_are_kept(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    tree(workspace, {"a": "a"})
    snapshots = Snapshots(tmp_path / "snapshots", keep=2)
    for n in range(4):
        snapshots.take(workspace, "env", f"turn_{n}")
    assert snapshots.names("env") == ["turn_2", "turn_3"]


def test_a_workspace_is_seeded_from_a_snapshot_as_a_copy(tmp_path: Path) -> None:
    source = tmp_path / "source"
    tree(source, {"a.txt": "from the parent"})
    snapshots = Snapshots(tmp_path / "snapshots")
    snapshots.take(source, "parent", "turn_1")
    workspaces = Workspaces(tmp_path / "workspaces", snapshots=snapshots)
    seed = WorkspaceSeed(environment_id="parent", snapshot="turn_1")
    binding = workspaces.bind("child", "openai_hosted", "", seed)
    assert (binding.root / "a.txt").read_text() == "from the parent"
    (binding.root / "a.txt").write_text("changed in the child")
    assert (snapshots.path("parent", "turn_1") / "a.txt").read_text() == "from the parent"
    # Once the workspace exists the seed is ignored.
    assert workspaces.bind("child", "openai_hosted", "", seed) == binding
    assert (binding.root / "a.txt").read_text() == "changed in the child"


def test_a_missing_snapshot_refuses_the_binding(tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "workspaces", snapshots=Snapshots(tmp_path / "s"))
    with pytest.raises(WorkspaceError) as refused:
        workspaces.bind("child", "openai_hosted", "", WorkspaceSeed("parent", "turn_9"))
    assert refused.value.code == "resource_unavailable"
    assert not (tmp_path / "workspaces" / "child").exists()
    with pytest.raises(SnapshotError):
        Snapshots(tmp_path / "s").path("../escape", "x")
