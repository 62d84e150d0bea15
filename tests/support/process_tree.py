"""The processes below a server process, read from /proc, for tests that check what
survives it."""

from __future__ import annotations

import os
import select
from pathlib import Path


def below(root: int) -> list[int]:
    """Every live process below `root` (zombies excluded)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    frontier = [root]
    while frontier:
        frontier = [child for pid in frontier for child in children.get(pid, [])]
        found += frontier
    return found


def survivors(held: dict[int, int], deadline: float = 30.0) -> list[int]:
    """The pids (of `held`: pid -> pidfd) whose process has not exited within the hang
    guard `deadline`; closes the pidfds."""
    waiting = dict(held)
    try:
        while waiting:
            ready, _, _ = select.select(list(waiting.values()), [], [], deadline)
            if not ready:
                break
            waiting = {pid: fd for pid, fd in waiting.items() if fd not in ready}
        return sorted(waiting)
    finally:
        for descriptor in held.values():
            os.close(descriptor)


def hold(pids: list[int]) -> dict[int, int]:
    """pid -> pidfd for each process still there."""
    held = {}
    for pid in pids:
        try:
            held[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
    return held
