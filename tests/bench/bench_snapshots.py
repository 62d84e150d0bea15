"""Workspace snapshot benchmarks (a script; pytest does not collect it).

Prints, for a managed workspace of FILES small files plus one LARGE_MIB MiB file on the
temporary directory's filesystem: the cost of its first snapshot (every file cloned or
copied), of a snapshot after one small file changed (unchanged files are hard links to
the previous snapshot), of seeding a forked workspace from a snapshot, and of a plain
`shutil.copytree` of the same tree for comparison; and whether the filesystem clones
(reflinks) files. Median of ROUNDS runs each.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.snapshots import Snapshots

FILES = 2000
FILE_BYTES = 4096
LARGE_MIB = 64
ROUNDS = 5


def make_workspace(root: Path) -> None:
    for n in range(FILES):
        directory = root / f"d{n % 40}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{n}.txt").write_bytes(os.urandom(FILE_BYTES))
    (root / "large.bin").write_bytes(os.urandom(LARGE_MIB * 1024 * 1024))


def clones(directory: Path) -> bool:
    """Whether FICLONE works here (a clone shares the source's blocks)."""
    source, target = directory / "probe-src", directory / "probe-dst"
    source.write_bytes(b"x" * 65536)
    try:
        import fcntl

        from runtime.snapshots import FICLONE

        with open(source, "rb") as src, open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
        return True
    except OSError:
        return False
    finally:
        source.unlink(missing_ok=True)
        target.unlink(missing_ok=True)


def timed(action: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    action(*args)
    return (time.perf_counter() - started) * 1000


def one_round(base: Path, workspace: Path, round_: int) -> tuple[float, float, float, float]:
    """(first snapshot, snapshot after one change, seed, copytree) in milliseconds."""
    snapshots = Snapshots(base / f"snapshots-{round_}")
    first = timed(snapshots.take, workspace, "env", "turn_1")
    (workspace / "d0" / "f0.txt").write_bytes(os.urandom(FILE_BYTES))
    incremental = timed(snapshots.take, workspace, "env", "turn_2")
    target = base / f"seeded-{round_}"
    seed = timed(snapshots.seed, target, "env", "turn_2")
    plain = base / f"copytree-{round_}"
    copytree = timed(shutil.copytree, workspace, plain)
    for path in (snapshots.root, target, plain):
        shutil.rmtree(path)
    return first, incremental, seed, copytree


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        base = Path(temporary)
        workspace = base / "workspace"
        make_workspace(workspace)
        rounds = [one_round(base, workspace, n) for n in range(ROUNDS)]
        first, incremental, seed, copytree = (
            statistics.median(column) for column in zip(*rounds, strict=True)
        )
        total_mib = (FILES * FILE_BYTES) / (1024 * 1024) + LARGE_MIB
        print(f"workspace: {FILES} files of {FILE_BYTES} B + {LARGE_MIB} MiB ({total_mib:.0f} MiB)")
        print(f"reflinks on this filesystem: {'yes' if clones(base) else 'no (copies)'}")
        print(f"first snapshot (median of {ROUNDS}):      {first:8.1f} ms")
        print(f"snapshot after one change (median):  {incremental:8.1f} ms")
        print(f"seed a forked workspace (median):    {seed:8.1f} ms")
        print(f"shutil.copytree, for comparison:     {copytree:8.1f} ms")


if __name__ == "__main__":
    main()
