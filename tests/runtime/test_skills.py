"""Installing a skill bundle in a workspace: unpacked at `.skills/<name>/` through the
workspace's own rules, whatever the archive holds."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from runtime.skills import install_skill
from runtime.workspaces import Binding, WorkspaceError


def bundle(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.fixture
def binding(tmp_path: Path) -> Binding:
    root = tmp_path / "ws"
    root.mkdir()
    return Binding(environment_id="env", type="openai_hosted", root=root)


def test_a_bundle_is_unpacked_under_its_name(binding: Binding) -> None:
    install_skill(binding, "report", bundle({"SKILL.md": b"---", "bin/run.py": b"print()"}))
    assert (binding.root / ".skills" / "report" / "SKILL.md").read_bytes() == b"---"
    assert (binding.root / ".skills" / "report" / "bin" / "run.py").read_bytes() == b"print()"


@pytest.mark.parametrize(
    "entries",
    [
        {"SKILL.md": b"---", "../../escape.txt": b"x"},
        {"SKILL.md": b"---", "/etc/passwd": b"x"},
        {"README.md": b"no manifest"},
    ],
)
def test_an_unsafe_or_incomplete_bundle_is_refused(
    binding: Binding, tmp_path: Path, entries: dict[str, bytes]
) -> None:
    with pytest.raises(WorkspaceError):
        install_skill(binding, "report", bundle(entries))
    assert not (tmp_path / "escape.txt").exists()


def test_not_a_zip_is_refused(binding: Binding) -> None:
    with pytest.raises(WorkspaceError):
        install_skill(binding, "report", b"not a zip")


def test_a_symlink_in_the_way_is_not_followed(binding: Binding, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (binding.root / ".skills").mkdir()
    (binding.root / ".skills" / "report").symlink_to(outside)
    with pytest.raises(WorkspaceError):
        install_skill(binding, "report", bundle({"SKILL.md": b"---"}))
    assert list(outside.iterdir()) == []


def test_an_installed_file_is_never_replaced(binding: Binding) -> None:
    install_skill(binding, "report", bundle({"SKILL.md": b"first"}))
    with pytest.raises(WorkspaceError):
        install_skill(binding, "report", bundle({"SKILL.md": b"second"}))
    assert (binding.root / ".skills" / "report" / "SKILL.md").read_bytes() == b"first"
