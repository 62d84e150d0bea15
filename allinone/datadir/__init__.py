"""The data directory as a whole: what it holds, how it is kept small and how it is
carried. `collection` purges deleted data past its retention and returns space to the
filesystem (`corebox gc`, and the retention job); `usage` reports bytes per category
(`corebox storage`); `backup` writes and restores consistent copies (`corebox backup`,
`corebox restore`).

Imports `storage` and the standard library, and for what an import accepts
(`bundle_rules`) Core's own rules for agents and sessions; never the API or the Runtime. Long
operations take an optional `on_progress(done, total)` callback (`total` None when
unknown), called from the thread or task doing the work.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int | None], None]


def no_progress(done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""
