"""A skill bundle: the files of one skill, with a `SKILL.md` at its root.

Uploads arrive as one zip or as the files of a directory (each part named by its
relative path). `normalise` checks them and returns one deterministic zip (sorted
entries, fixed timestamps) holding the skill's files relative to its root, with the
`name` and `description` read from `SKILL.md`'s front matter. Pure: no I/O beyond
in-memory zip reading. Limits follow the hosted service: 5 MiB as uploaded, 20 MiB
expanded.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from allinone.core.errors import InvalidRequest

MAX_UPLOAD_BYTES = 5 * 1024 * 1024
MAX_EXPANDED_BYTES = 20 * 1024 * 1024
MAX_ENTRIES = 1000
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MANIFEST = "SKILL.md"
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Bundle:
    name: str
    description: str
    archive: bytes  # the normalised zip


def is_zip(data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06"


def normalise(parts: list[tuple[str, bytes]], param: str = "files") -> Bundle:
    """Check an upload and return its bundle, or raise InvalidRequest naming `param`."""
    if not parts:
        raise InvalidRequest("Upload a SKILL.md with the skill's files, or one zip.", param)
    if sum(len(data) for _, data in parts) > MAX_UPLOAD_BYTES:
        raise InvalidRequest("A skill upload may be at most 5 MiB.", param)
    if len(parts) == 1 and (parts[0][0].lower().endswith(".zip") or is_zip(parts[0][1])):
        files = _unzipped(parts[0][1], param)
    else:
        files = {}
        for name, data in parts:
            path = _clean(name, param)
            if path in files:
                raise InvalidRequest(f"The file {path!r} appears twice.", param)
            files[path] = data
    files = _rooted(files, param)
    name, description = front_matter(files[MANIFEST], param)
    return Bundle(name, description, _zipped(files))


def read(archive: bytes) -> dict[str, bytes]:
    """The files of a normalised bundle, by relative path."""
    return _unzipped(archive, "files")


def _unzipped(data: bytes, param: str) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise InvalidRequest("The zip could not be read.", param) from exc
    with archive:
        entries = [info for info in archive.infolist() if not info.is_dir()]
        if len(entries) > MAX_ENTRIES:
            raise InvalidRequest(f"A skill may hold at most {MAX_ENTRIES} files.", param)
        if sum(info.file_size for info in entries) > MAX_EXPANDED_BYTES:
            raise InvalidRequest("A skill may be at most 20 MiB expanded.", param)
        files: dict[str, bytes] = {}
        for info in entries:
            path = _clean(info.filename, param)
            if path in files:
                raise InvalidRequest(f"The file {path!r} appears twice.", param)
            try:
                with archive.open(info) as member:
                    body = member.read(info.file_size + 1)
            except (zipfile.BadZipFile, ValueError, NotImplementedError, OSError) as exc:
                raise InvalidRequest("The zip could not be read.", param) from exc
            if len(body) != info.file_size:
                raise InvalidRequest("The zip could not be read.", param)
            files[path] = body
    return files


def _clean(name: str, param: str) -> str:
    path = name.replace("\\", "/").strip("/") if name else ""
    segments = path.split("/")
    if (
        not path
        or len(path) > 1024
        or any(s in ("", ".", "..") for s in segments)
        or any(ord(c) < 0x20 or c == "\x7f" for c in path)
    ):
        raise InvalidRequest(f"The file name {name[:80]!r} is not a clean relative path.", param)
    return path


def _rooted(files: dict[str, bytes], param: str) -> dict[str, bytes]:
    """Strip one folder every file shares when `SKILL.md` sits inside it."""
    if MANIFEST in files:
        return files
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) == 1 and all("/" in path for path in files):
        top = tops.pop() + "/"
        files = {path[len(top) :]: data for path, data in files.items()}
        if MANIFEST in files:
            return files
    raise InvalidRequest("A skill needs a SKILL.md at its root.", param)


def front_matter(manifest: bytes, param: str = "files") -> tuple[str, str]:
    """`name` and `description` from SKILL.md's front matter (`---` lines around
    `key: value` lines)."""
    try:
        text = manifest.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidRequest("SKILL.md must be UTF-8 text.", param) from exc
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise InvalidRequest("SKILL.md must start with front matter (a '---' line).", param)
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line[:1].isspace():
            fields[key.strip()] = _unquoted(value.strip())
    else:
        raise InvalidRequest("SKILL.md's front matter is not closed by a '---' line.", param)
    name, description = fields.get("name", ""), fields.get("description", "")
    if not NAME.match(name):
        raise InvalidRequest(
            "SKILL.md's name must be 1-64 lowercase letters, digits and hyphens.", param
        )
    if not description or len(description) > MAX_DESCRIPTION:
        raise InvalidRequest("SKILL.md's description must be 1-1024 characters.", param)
    return name, description


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    return out.getvalue()
