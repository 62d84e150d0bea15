"""The process trees of the CLIs a harness starts.

`die_with_runtime` is the `preexec_fn` of every CLI process: the kernel kills the CLI
(SIGKILL) when the thread that started it ends, so a Runtime that dies, even by kill -9,
leaves no CLI behind holding a model credential. It fires on the exit of the starting
*thread*: CLIs are started from the event loop's thread, which lives as long as the
Runtime.

`end_descendants(pid)` ends every process below `pid` (not `pid` itself), whatever
process group or session they moved to: it stops them from the top down until a walk of
`/proc` finds no new one (a stopped process can neither fork nor have its children
re-parented away), kills them, and waits until each has exited. Each process is held by
a pidfd from the moment it is found, so a reused pid is never signalled. It returns
whether every one is confirmed gone; where the platform cannot walk and hold processes
(no `/proc`, no pidfds) nothing is confirmed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_WAIT_SECONDS = 5.0
PROC = Path("/proc")


def death_request(parent: int) -> Callable[[], None] | None:
    """A call asking the kernel to SIGKILL the calling process when the thread that
    started it ends, and killing it at once if `parent` is already gone (None where
    there is no such request). Everything it needs is looked up here, so that as a
    `preexec_fn` the child only makes two system calls."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    getppid, getpid, kill = os.getppid, os.getpid, os.kill

    def request() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if getppid() != parent:  # the parent died before the request took effect
            kill(getpid(), signal.SIGKILL)

    return request


def die_with_runtime() -> Callable[[], None] | None:
    """The `preexec_fn` of a CLI process: it dies with the Runtime that starts it."""
    return death_request(os.getpid())


def tree_supported() -> bool:
    return hasattr(os, "pidfd_open") and (PROC / "self" / "stat").exists()


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every process below `root`, parents before their children."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [child for pid in frontier for child in children.get(pid, [])]
        found += below
        frontier = below
    return found


async def end_descendants(root: int) -> bool:
    """End every process below `root`; True when each one is confirmed gone."""
    if not tree_supported():
        return False
    held: dict[int, int] = {}  # pid -> pidfd
    try:
        confirmed = _stop_all(root, held)
        for descriptor in held.values():
            confirmed = _send(descriptor, signal.SIGKILL) and confirmed
        return await _exited(list(held.values())) and confirmed
    finally:
        for descriptor in held.values():
            os.close(descriptor)


def _stop_all(root: int, held: dict[int, int]) -> bool:
    """Stop the tree below `root` until a walk finds nothing new; False when a process
    could not be held or stopped."""
    confirmed = True
    while True:
        new = [pid for pid in descendants(root) if pid not in held]
        if not new:
            return confirmed
        for pid in new:
            try:
                held[pid] = os.pidfd_open(pid)
            except ProcessLookupError:
                continue  # gone already
            except OSError as exc:
                log.warning("process %d could not be held (%s)", pid, type(exc).__name__)
                confirmed = False
                continue
            confirmed = _send(held[pid], signal.SIGSTOP) and confirmed


def _send(descriptor: int, number: signal.Signals) -> bool:
    try:
        signal.pidfd_send_signal(descriptor, number)
    except ProcessLookupError:
        return True  # it has exited
    except OSError as exc:
        log.warning("a process could not be signalled (%s)", type(exc).__name__)
        return False
    return True


async def _exited(descriptors: list[int]) -> bool:
    """Wait, bounded, until every pidfd reports its process exited."""
    loop = asyncio.get_running_loop()
    waits: list[asyncio.Future[None]] = []
    for descriptor in descriptors:
        future: asyncio.Future[None] = loop.create_future()
        loop.add_reader(descriptor, _settle, future)
        waits.append(future)
    try:
        if not waits:
            return True
        _, pending = await asyncio.wait(waits, timeout=EXIT_WAIT_SECONDS)
        return not pending
    finally:
        for descriptor in descriptors:
            loop.remove_reader(descriptor)


def _settle(future: asyncio.Future[None]) -> None:
    with contextlib.suppress(asyncio.InvalidStateError):
        future.set_result(None)
