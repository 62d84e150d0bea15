"""Where a one-line echo turn's database bytes go (a script; pytest does not collect it).

    python tests/bench/bench_bytes.py [--turns 400]

Starts a server (the binary in COREBOX_BINARY, or this checkout), runs a warm-up of echo
turns on 8 existing sessions, snapshots SQLite's `dbstat` (bytes per table and index),
runs `--turns` more, and prints the growth per turn of each table and index, largest
first, with the database file's own growth per turn. All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # the shared server helpers beside this script
import bench_durable

WARM_UP_TURNS = 200


def dbstat(db_path: Path) -> dict[str, int]:
    """Bytes of pages used by each table and index (payload, headers and unused space)."""
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


def payloads(db_path: Path) -> dict[str, int]:
    """Payload bytes (without page slack) of each table and index."""
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT name, SUM(payload) FROM dbstat GROUP BY name").fetchall()
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="measured turns")
    parser.add_argument("--keep", type=Path, help="a directory to keep the data in")
    args = parser.parse_args()
    argv, env, label = bench.command()
    with tempfile.TemporaryDirectory(prefix="corebox-bytes-") as tmp:
        work = args.keep or Path(tmp)
        db_path = work / "data" / "corebox.db"
        with bench.serve(argv, env, work) as (server, _):
            bench_durable.turns_on_sessions(server.port, WARM_UP_TURNS)
            before, before_payload = dbstat(db_path), payloads(db_path)
            file_before = bench_durable.database_bytes(work / "data")
            bench_durable.turns_on_sessions(server.port, args.turns)
            after, after_payload = dbstat(db_path), payloads(db_path)
            file_after = bench_durable.database_bytes(work / "data")
    growth = {name: (after.get(name, 0) - before.get(name, 0)) / args.turns for name in after}
    print(f"bytes per echo turn by table/index ({label}, {args.turns} turns)")
    print(f"{'name':40} {'pages B/turn':>12} {'payload B/turn':>14}")
    for name, per_turn in sorted(growth.items(), key=lambda kv: -kv[1]):
        if per_turn <= 0 and after_payload.get(name, 0) == before_payload.get(name, 0):
            continue
        payload = (after_payload.get(name, 0) - before_payload.get(name, 0)) / args.turns
        print(f"{name:40} {per_turn:12.0f} {payload:14.0f}")
    print(f"{'total (pages)':40} {sum(growth.values()):12.0f}")
    print(f"{'database file':40} {(file_after - file_before) / args.turns:12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
