"""The content-addressed blob store: large bodies beside the database.

A blob is a file `<root>/<first two hex digits>/<sha256>`. `put` writes it to a
temporary file, fsyncs it, renames it into place and fsyncs the directory, so a blob
that exists is whole. A row references a blob by its sha256 in the same transaction
that records the row; the writer calls `ensure` inside that transaction, so a blob a
concurrent collection removed is written again before the reference commits.
`sweep` (run inside a write transaction, holding the writer's lock) removes every blob
no row references. Blobs are never changed once written.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

THRESHOLD_BYTES = 64 * 1024
CHUNK_BYTES = 256 * 1024
_NAME = re.compile(r"^[0-9a-f]{64}$")


class BlobStore:
    def __init__(self, root: Path, threshold: int = THRESHOLD_BYTES) -> None:
        self.root = root
        self.threshold = threshold

    def path(self, sha256: str) -> Path:
        if not _NAME.match(sha256):
            raise ValueError("not a sha256 hex digest")
        return self.root / sha256[:2] / sha256

    def holds(self, size: int) -> bool:
        """Whether a body of `size` bytes goes to the store rather than the database."""
        return size >= self.threshold

    def put(self, sha256: str, data: bytes) -> None:
        """Write the blob durably unless it is already there."""
        target = self.path(sha256)
        if target.is_file():
            return
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staged = target.parent / f".tmp-{secrets.token_hex(8)}"
        with staged.open("wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        _install(staged, target)

    def put_from(self, sha256: str, source: BinaryIO) -> None:
        """Write the blob durably from `source` (from its current position to its end,
        a chunk at a time) unless it is already there. The bytes must hash to `sha256`:
        otherwise nothing is installed and `ValueError` is raised."""
        target = self.path(sha256)
        if target.is_file():
            return
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staged = target.parent / f".tmp-{secrets.token_hex(8)}"
        digest = hashlib.sha256()
        try:
            with staged.open("wb") as out:
                while chunk := source.read(CHUNK_BYTES):
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if digest.hexdigest() != sha256:
                raise ValueError("the body does not match its sha256")
            _install(staged, target)
        finally:
            staged.unlink(missing_ok=True)

    def ensure(self, sha256: str, data: bytes) -> None:
        """`put`, for the writer's transaction: cheap when the blob is there."""
        if not self.path(sha256).is_file():
            self.put(sha256, data)

    def read(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def open(self, sha256: str) -> BinaryIO:
        """The blob opened for reading; it stays readable to its end even if a sweep
        removes the blob meanwhile. FileNotFoundError when there is no such blob."""
        return self.path(sha256).open("rb")

    def names(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for folder in sorted(self.root.iterdir()):
            if folder.is_dir():
                for entry in sorted(folder.iterdir()):
                    if _NAME.match(entry.name):
                        yield entry.name

    def sweep(self, referenced: set[str], *, dry_run: bool = False) -> list[str]:
        """Remove (or, with `dry_run`, list) every blob not in `referenced`."""
        gone = [name for name in self.names() if name not in referenced]
        if not dry_run:
            for name in gone:
                self.path(name).unlink(missing_ok=True)
        return gone


def _install(staged: Path, target: Path) -> None:
    """Move a written, fsynced file into place and make the rename durable."""
    staged.chmod(0o600)
    os.replace(staged, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
