"""Skill bundles (pure): what an upload must hold and the bounds on what it expands to."""

from __future__ import annotations

import io
import zipfile

import pytest

from allinone.core.errors import InvalidRequest
from allinone.core.skills.bundles import MAX_EXPANDED_BYTES, front_matter, normalise, read

MANIFEST = b'---\nname: tidy\ndescription: "Tidy a folder: sort, rename."\n---\nbody\n'


def zipped(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_shared_top_folder_is_stripped_and_the_result_is_deterministic() -> None:
    first = normalise([("tidy/SKILL.md", MANIFEST), ("tidy/a.txt", b"a")])
    second = normalise([("x.zip", zipped({"tidy/a.txt": b"a", "tidy/SKILL.md": MANIFEST}))])
    assert (first.name, first.description) == ("tidy", "Tidy a folder: sort, rename.")
    assert first.archive == second.archive
    assert read(first.archive) == {"SKILL.md": MANIFEST, "a.txt": b"a"}


def test_an_archive_that_expands_past_the_bound_is_refused_unread() -> None:
    bomb = zipped({"SKILL.md": MANIFEST, "zeros": bytes(MAX_EXPANDED_BYTES)})
    assert len(bomb) < 1024 * 1024
    with pytest.raises(InvalidRequest, match="20 MiB"):
        normalise([("bomb.zip", bomb)])


@pytest.mark.parametrize(
    "manifest",
    [
        b"---\nname: tidy\ndescription: d\n",  # never closed
        b"---\nname: -tidy\ndescription: d\n---\n",
        b"---\nname: " + b"a" * 65 + b"\ndescription: d\n---\n",
        b"---\nname: tidy\ndescription: " + b"d" * 1025 + b"\n---\n",
        b"\xff\xfe",
    ],
)
def test_bad_front_matter_is_refused(manifest: bytes) -> None:
    with pytest.raises(InvalidRequest):
        front_matter(manifest)
