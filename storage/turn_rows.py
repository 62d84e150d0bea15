"""How a turn's fields are stored (migration 29), and back.

Writers name a turn's fields as readers see them (`manifest`, `context`,
`config_digest`, `usage`); `stored` turns them into the columns that hold them:
documents many turns share are named by a key (`storage.turn_documents`), and a usage
of the standard shape is kept as its five counts (any other shape stays JSON in
`usage_other`). The view `turns_full` gives them back as they were written.
"""

from __future__ import annotations

from typing import Any

from storage import turn_documents
from storage.database import Tx
from storage.rows import dumps, loads

# Fields kept as a turn document, and the column naming it.
DOCUMENTS = {"manifest": "manifest_key", "context": "context_key", "config_digest": "config_key"}
# The counts of a usage in its standard shape, in the shape's order.
TOKEN_COLUMNS = (
    "tokens_input",
    "tokens_cached",
    "tokens_output",
    "tokens_reasoning",
    "tokens_total",
)
USAGE_COLUMNS = (*TOKEN_COLUMNS, "usage_other")
# Columns of the stored form only, never shown to readers outside storage.
INTERNAL = frozenset({*DOCUMENTS.values(), *USAGE_COLUMNS})
_SHAPE = (
    ("input_tokens",),
    ("input_tokens_details", "cached_tokens"),
    ("output_tokens",),
    ("output_tokens_details", "reasoning_tokens"),
    ("total_tokens",),
)


async def stored(tx: Tx, fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` (a turn's fields by their readers' names) as the columns that hold them."""
    columns: dict[str, Any] = {}
    for name, value in fields.items():
        if name in DOCUMENTS:
            columns[DOCUMENTS[name]] = await document_key(tx, name, value)
        elif name == "usage":
            columns.update(usage_columns(value))
        else:
            columns[name] = value
    return columns


async def document_key(tx: Tx, name: str, value: Any) -> int | None:
    """The key of the document holding `value` (None for None). JSON given as text is
    stored in its compact form, so equal documents share one key."""
    if value is None:
        return None
    return await turn_documents.key_of(tx, text_of(name, value))


def text_of(name: str, value: Any) -> str:
    if name == "config_digest":
        return str(value)
    return dumps(loads(value) if isinstance(value, str) else value)


def usage_columns(usage: Any) -> dict[str, Any]:
    """The stored form of a turn's usage (a dict, its JSON text, or None)."""
    columns: dict[str, Any] = dict.fromkeys(USAGE_COLUMNS)
    if usage is None:
        return columns
    value = loads(usage) if isinstance(usage, str) else usage
    counts = _counts(value)
    if counts is None:
        columns["usage_other"] = dumps(value)
    else:
        columns.update(zip(TOKEN_COLUMNS, counts, strict=True))
    return columns


def _counts(usage: Any) -> list[int] | None:
    """The five counts of a usage in exactly the standard shape (keys in its order,
    integer counts), else None."""
    if not isinstance(usage, dict) or list(usage) != [path[0] for path in _SHAPE]:
        return None
    counts: list[int] = []
    for path in _SHAPE:
        value = usage[path[0]]
        if len(path) == 2:
            if not isinstance(value, dict) or list(value) != [path[1]]:
                return None
            value = value[path[1]]
        if type(value) is not int:
            return None
        counts.append(value)
    return counts
