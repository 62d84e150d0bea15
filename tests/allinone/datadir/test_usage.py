"""`corebox storage` counts a file once however many names it has: a snapshot keeps an
unchanged file as a hard link to the one before it."""

from __future__ import annotations

import os
from pathlib import Path

from allinone.datadir.usage import tree_bytes


def test_a_file_with_several_names_is_counted_once(tmp_path: Path) -> None:
    first, second = tmp_path / "snap-1", tmp_path / "snap-2"
    first.mkdir()
    second.mkdir()
    (first / "kept.bin").write_bytes(b"k" * 1000)
    os.link(first / "kept.bin", second / "kept.bin")  # unchanged: linked
    (second / "changed.txt").write_bytes(b"c" * 10)
    (second / "elsewhere").symlink_to(first / "kept.bin")  # a symlink is not a file here
    assert tree_bytes(tmp_path) == 1010
    assert tree_bytes(tmp_path / "missing") == 0
