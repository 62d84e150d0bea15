"""Tier 3: journal patches are stored deflated against a preset dictionary and read back
exactly; patches stored as text (by earlier releases, or too small to gain) still read."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

from storage import Database, journal, journal_dictionary
from storage.database import Tx
from storage.rows import dumps

from .test_journal import _session

TURN = "turn_01a22ed0b6db00050b925f2dde43"
ITEM = "msg_01a22ed0b702000119c936c9581e"


def test_a_typical_patch_packs_to_a_fraction_and_unpacks_exactly() -> None:
    text = dumps({"c": {"turn_id": [TURN], "item_id": [ITEM]}})
    packed = journal_dictionary.pack(text)
    assert isinstance(packed, bytes) and packed[0] == journal_dictionary.CURRENT
    assert len(packed) < len(text) * 0.7
    assert journal_dictionary.unpack(packed) == text


def test_packing_matches_a_fresh_compressor_byte_for_byte() -> None:
    # The stored bytes are the file format: a reused, pre-loaded compressor must write
    # exactly what a compressor made for each patch writes, patch after patch.
    texts = [dumps({"c": {"delta": [str(n) * n]}, "r": ["part"]}) for n in range(1, 40)]
    for text in [*texts, dumps({"c": {"turn_id": [TURN], "item_id": [ITEM]}})]:
        fresh = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=journal_dictionary.DICTIONARIES[1])
        expected = bytes((1,)) + fresh.compress(text.encode()) + fresh.flush()
        packed = journal_dictionary.pack(text)
        assert packed == (expected if len(expected) < len(text.encode()) else text)


def test_a_patch_that_would_not_shrink_stays_text() -> None:
    assert journal_dictionary.pack("{}") == "{}"
    assert journal_dictionary.unpack("{}") == "{}"


def test_stored_rows_are_blobs_and_text_rows_read_alike(tmp_path: Path) -> None:
    body = {"session_id": "s", "turn_id": TURN, "item_id": ITEM, "delta": "hi"}
    event = dumps({"event_id": "evt_x", "type": "agent.session.idle", **body})

    async def main() -> tuple[str, list[str]]:
        db = await Database.open(tmp_path / "d.db")
        await _session(db, "s")
        bases = journal.Bases()
        for seq in (1, 2):
            await db.write(
                lambda tx, seq=seq: journal.append_compact(
                    tx, bases, "s", seq, ("evt_x", "agent.session.idle", body)
                )
            )

        async def unpack_in_place(tx: Tx) -> str:
            row = await tx.fetchone("SELECT typeof(payload) AS t FROM session_events")
            stored = await tx.fetchall("SELECT seq, payload FROM session_events")
            for found in stored:
                text = journal_dictionary.unpack(found["payload"])
                await tx.execute(
                    "UPDATE session_events SET payload = ? WHERE seq = ?", (text, found["seq"])
                )
            assert row is not None
            return str(row["t"])

        kind = await db.write(unpack_in_place)
        rows = await db.read(lambda r: journal.after(r, "s", 0))
        await db.close()
        return kind, [row["payload"] for row in rows]

    kind, read = asyncio.run(main())
    assert kind == "blob"
    assert read == [event, event]
