"""Runtime hook of the one-file executable: native libraries that a start does not load.

The one-file bootloader copies every shared library it carries into a temporary directory
at every start. The groups named in `GROUPS` (PostgreSQL's driver with its libpq, the
cipher's library, ...) are not among them: build/corebox.spec packs each group into a zip
held by a module of the PYZ archive (`_corebox_deferred_<group>`, read from the executable
only when imported). The first import of a group's top-level module writes its files
where the bootloader would have put them, then lets the import go on as usual.

build/corebox.spec writes a copy of this file with `GROUPS` filled in; as it stands here
(no group), it changes nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

GROUPS: frozenset[str] = frozenset()
PAYLOAD_PREFIX = "_corebox_deferred_"


class DeferredNatives:
    """A meta path finder that finds nothing: at the first import of a group's top-level
    module it unpacks the group's files, once, and leaves the finding to the others."""

    def __init__(self, groups: frozenset[str], home: str) -> None:
        self._pending = set(groups)
        self._home = home
        self._lock = threading.Lock()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if path is None and fullname in self._pending:
            with self._lock:
                if fullname in self._pending:
                    self._unpack(fullname)
                    self._pending.discard(fullname)
        return None

    def invalidate_caches(self) -> None:
        """Nothing cached here."""

    def _unpack(self, group: str) -> None:
        import io
        import zipfile

        name = PAYLOAD_PREFIX + group
        payload: bytes = importlib.import_module(name).PAYLOAD
        sys.modules.pop(name, None)  # the payload's bytes are not kept
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            for member in archive.infolist():
                written = archive.extract(member, self._home)
                os.chmod(written, 0o700)
        importlib.invalidate_caches()


def install() -> None:
    home = getattr(sys, "_MEIPASS", None)
    if GROUPS and home is not None:
        sys.meta_path.insert(0, DeferredNatives(GROUPS, home))


install()
