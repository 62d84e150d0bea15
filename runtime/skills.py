"""Skills in a workspace: a `runtime_prepare` `skill` transfer carries one zip, which is
unpacked at `/workspace/.skills/<name>/` (the documented place a harness and its tools
find them). Every entry is written as a new file through the workspace's own rules (no
`..`, no absolute path, no symlink followed, nothing replaced); an archive that breaks a
rule or the bounds installs nothing further and is refused.
"""

from __future__ import annotations

import io
import zipfile

from runtime.workspaces import Binding, WorkspaceError, write_new_file

SKILLS_DIRECTORY = ".skills"
MAX_EXPANDED_BYTES = 20 * 1024 * 1024
MAX_ENTRIES = 1000


def skill_directory(name: str) -> str:
    """The workspace-relative directory a skill is installed in."""
    return f"{SKILLS_DIRECTORY}/{name}"


def install_skill(binding: Binding, name: str, archive: bytes) -> None:
    """Unpack `archive` under `.skills/<name>/`; raise WorkspaceError when it cannot."""
    try:
        bundle = zipfile.ZipFile(io.BytesIO(archive))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise WorkspaceError("runtime_preparation_rejected", "the skill is not a zip") from exc
    with bundle:
        entries = [info for info in bundle.infolist() if not info.is_dir()]
        if len(entries) > MAX_ENTRIES or sum(i.file_size for i in entries) > MAX_EXPANDED_BYTES:
            raise WorkspaceError("runtime_preparation_rejected", "the skill is too large")
        if "SKILL.md" not in {info.filename for info in entries}:
            raise WorkspaceError("runtime_preparation_rejected", "the skill has no SKILL.md")
        for info in entries:
            if info.filename.startswith("/") or "\\" in info.filename:
                raise WorkspaceError("runtime_preparation_rejected", "an entry path is unsafe")
            try:
                with bundle.open(info) as member:
                    data = member.read(info.file_size + 1)
            except (zipfile.BadZipFile, ValueError, NotImplementedError, OSError) as exc:
                raise WorkspaceError("runtime_preparation_rejected", "an entry is broken") from exc
            if len(data) != info.file_size:
                raise WorkspaceError("runtime_preparation_rejected", "an entry is broken")
            write_new_file(binding, f"{skill_directory(name)}/{info.filename}", data)
