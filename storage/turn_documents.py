"""Turn documents: texts that many turns share (run manifests, model contexts,
configuration digests), stored once and named by an integer key from the turn's row
(migration 29; `storage.turn_rows` says which).

A document is found by its digest, the first 32 hex digits of the sha256 of its UTF-8
text; `key_of` returns the key of an equal document already stored, or stores it.
Documents are never changed; one that no turn names any more is removed by `collect`
(called by `storage.purge.collect`).
Readers get turns with their documents through the `turns_full` view.
"""

from __future__ import annotations

import hashlib

from storage.database import Tx

# The view that reads turns as readers know them: every column of `turns`, plus
# `manifest`, `context`, `config_digest`, `checkpoint_config_digest` and `usage`.
VIEW = "turns_full"


# A document by its digest, and storing one unless an equal one is stored (the statements
# an import on a plain connection runs too).
FIND = "SELECT key FROM turn_documents WHERE digest = ?"
STORE = "INSERT INTO turn_documents (digest, body) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING"


def digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:32]


async def key_of(tx: Tx, body: str) -> int:
    """The key of the stored document `body` (stored now if it was not): one statement
    for a known document, two for a new one."""
    found = digest(body)
    row = await tx.fetchone(FIND, (found,))
    if row is None:
        # fetchall steps the statement to its end, so nothing is left open; no row comes
        # back only if an equal document was stored since the lookup.
        stored = await tx.fetchall(STORE + " RETURNING key", (found, body))
        row = stored[0] if stored else await tx.fetchone(FIND, (found,))
    assert row is not None
    return int(row["key"])


_UNUSED = (
    "SELECT key FROM turn_documents"
    " EXCEPT SELECT manifest_key FROM turns WHERE manifest_key IS NOT NULL"
    " EXCEPT SELECT context_key FROM turns WHERE context_key IS NOT NULL"
    " EXCEPT SELECT config_key FROM turns WHERE config_key IS NOT NULL"
)


async def collect(tx: Tx) -> int:
    """Remove the documents no turn names (one pass over the turns); return how many."""
    return await tx.execute(f"DELETE FROM turn_documents WHERE key IN ({_UNUSED})")
