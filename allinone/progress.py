"""A progress bar for long CLI work (backup, restore, export, import, gc), drawn on a
terminal and silent otherwise.

The library functions of those commands report through an `on_progress(done, total)`
callback; a `Bar` is such a callback. On a terminal it redraws one line in place, at
most every `interval` seconds (and always at 100 %), and ends it with a newline when
closed; on a pipe or a file it writes nothing at all, so piped output stays exactly
what the command prints itself.

    with Bar("export", sys.stderr, unit="bytes") as progress:
        export(data_dir, target, on_progress=progress)

A few dozen lines of our own instead of a dependency: the bar needs no colours, no
nesting and no estimates, and the commands it serves must stay importable in a frozen
build without another package.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

WIDTH = 30
INTERVAL_SECONDS = 0.1


class Bar:
    def __init__(
        self,
        label: str,
        stream: TextIO,
        *,
        unit: str = "items",
        interval: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`unit` is `bytes` (sizes shown in KiB/MiB/GiB) or a noun for counted things."""
        self._label = label
        self._stream = stream
        self._unit = unit
        self._interval = interval
        self._clock = clock
        self._enabled = stream.isatty()
        self._last_drawn: float | None = None
        self._drawn = False

    @property
    def enabled(self) -> bool:
        return self._enabled

    def relabel(self, label: str) -> None:
        """Name what the next frames measure (a new step of the same work)."""
        if label != self._label:
            self._label = label
            self._last_drawn = None  # a new step is drawn at once

    def __call__(self, done: int, total: int | None) -> None:
        """Report `done` of `total` (None or 0 when the total is not known yet)."""
        if not self._enabled:
            return
        total = total or 0
        now = self._clock()
        finished = total > 0 and done >= total
        if (
            not finished
            and self._last_drawn is not None
            and now - self._last_drawn < self._interval
        ):
            return
        self._last_drawn = now
        self._stream.write("\r" + line(self._label, done, total, self._unit) + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line (only if one was drawn)."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False

    def __enter__(self) -> Bar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def line(label: str, done: int, total: int, unit: str = "items") -> str:
    """One frame: `label [#####.....]  50%  5.0/10.0 MiB` (no bar when the total is not
    known yet)."""
    amount = f"{_amount(done, unit)}/{_amount(total, unit)}" if total > 0 else _amount(done, unit)
    if total <= 0:
        return f"{label} {amount}" if unit else label
    share = min(max(done / total, 0.0), 1.0)
    filled = int(share * WIDTH)
    return f"{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}  {amount}"


def _amount(count: int, unit: str) -> str:
    if unit != "bytes":
        return f"{count} {unit}" if unit else str(count)
    size = float(count)
    for name in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {name}" if name == "B" else f"{size:.1f} {name}"
        size /= 1024
    return f"{size:.1f} GiB"
