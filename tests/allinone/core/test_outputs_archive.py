"""The outputs/ archive a Runtime exports for artifact capture: its regular files are
read back whole, and an archive that cannot be read is the capture's own failure
(`WorkspaceUnavailable`), which the turn's observer logs, never a crash."""

from __future__ import annotations

import io
import tarfile

import pytest

from allinone.core.environments import _regular_files
from allinone.core.gateway.workspace_rules import WorkspaceUnavailable


def test_regular_files_come_back_and_other_members_are_left_out() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = b"hello"
        info = tarfile.TarInfo("report.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        folder = tarfile.TarInfo("nested")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
    assert _regular_files(buffer.getvalue()) == [("report.txt", b"hello")]


def test_an_archive_that_cannot_be_read_is_workspace_unavailable() -> None:
    with pytest.raises(WorkspaceUnavailable) as caught:
        _regular_files(b"not a tar archive" * 64)
    assert caught.value.code == "outputs_unreadable"
