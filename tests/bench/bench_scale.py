"""What a turn costs the database, and whether it grows with the database (a script).

    COREBOX_BINARY=/abs/path/dist/corebox python tests/bench/bench_scale.py [--turns 200]

1. On a fresh data directory: echo turn latency p50/p99 and, from the Core key's
   `/readyz` storage evidence, the group commits, write and read jobs and SQL statements
   per echo turn.
2. The server stops; 100,000 finished turns are written into its database directly
   (10,000 sessions of 9 turns, and one session of 10,000 turns that the API created),
   each with its items; the server starts again on the same directory.
3. The same latency on a new session, and on the 10,000-turn session, as ratios to the
   fresh figures: a hot query that grows with the database shows here.
All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # the shared server helpers beside this script

SESSIONS = 10_000
TURNS_PER_SESSION = 9
BIG_SESSION_TURNS = 10_000


def activity(port: int, data_dir: Path) -> dict[str, int]:
    """The storage counters of the Core key's readiness evidence."""
    key = (data_dir / "secrets" / "core.key").read_text().strip()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/readyz", headers={"Authorization": f"Bearer {key}"})
        body = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    counters: dict[str, int] = body["checks"]["storage"]["activity"]
    return counters


def seed_turns(db_path: Path, big_session: str) -> int:
    """Finished turns with two items each: `SESSIONS` sessions of `TURNS_PER_SESSION`,
    and `BIG_SESSION_TURNS` more on `big_session`. Returns how many turns were written."""
    conn = sqlite3.connect(db_path)
    project, agent_id, agent = conn.execute(
        "SELECT project_id, agent_id, agent FROM sessions WHERE id = ?", (big_session,)
    ).fetchone()
    now = int(time.time()) - 86_400
    conn.executemany(
        "INSERT INTO sessions (id, project_id, agent_id, harness, created_at, last_active_at,"
        " agent, environment, metadata, vault_ids) VALUES (?, ?, ?, 'scripted', ?, ?, ?,"
        " '{\"type\": \"none\"}', '{}', '[]')",
        [(f"sess_scale_{i:06d}", project, agent_id, now, now, agent) for i in range(SESSIONS)],
    )
    owners = [f"sess_scale_{i:06d}" for i in range(SESSIONS) for _ in range(TURNS_PER_SESSION)]
    owners += [big_session] * BIG_SESSION_TURNS
    # Each turn's usage in its stored form (migration 29): the counts of the standard shape.
    conn.executemany(
        "INSERT INTO turns (id, session_id, agent_id, status, created_at, started_at,"
        " completed_at, tokens_input, tokens_cached, tokens_output, tokens_reasoning,"
        " tokens_total) VALUES (?, ?, ?, 'completed', ?, ?, ?, 3, 0, 3, 0, 6)",
        [
            (f"turn_scale_{n:07d}", owner, agent_id, now + n // 1000, now, now)
            for n, owner in enumerate(owners)
        ],
    )
    message = json.dumps(
        {"role": "user", "content": [{"type": "input_text", "text": "x"}], "phase": None}
    )
    conn.executemany(
        "INSERT INTO items (id, session_id, turn_id, position, created_at, type, status,"
        " payload) VALUES (?, ?, ?, ?, ?, 'message', 'completed', ?)",
        [
            (f"msg_scale_{n:07d}_{k}", owner, f"turn_scale_{n:07d}", 1000 + 2 * n + k, now, message)
            for n, owner in enumerate(owners)
            for k in range(2)
        ],
    )
    conn.commit()
    conn.close()
    return len(owners)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="echo turns per measurement")
    args = parser.parse_args()
    argv, env, label = bench.command()
    rows: list[tuple[str, str]] = [("server", label)]
    try:
        with tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir:
            data_dir = Path(workdir) / "data"
            with bench.serve(argv, env, Path(workdir)) as (server, _):
                big = bench.new_session(server.port)
                before = activity(server.port, data_dir)
                fresh = bench.turn_latencies(server.port, args.turns, big)
                after = activity(server.port, data_dir)
            seeded = seed_turns(data_dir / "corebox.db", big)
            with bench.serve(argv, env, Path(workdir)) as (server, _):
                bench.turn_latencies(server.port, 20)  # warm the caches of the new process
                large = bench.turn_latencies(server.port, args.turns)
                long_session = bench.turn_latencies(server.port, args.turns, big)
    except bench.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1

    # Each turn's counters include the readiness probe's own write and read once per
    # measurement (two of them over the whole run): negligible against 200 turns.
    per_turn = {name: (after[name] - before[name]) / len(fresh) for name in after}
    rows.append(
        (
            "per echo turn: commits / write jobs / read jobs",
            f"{per_turn['commits']:.1f} / {per_turn['write_jobs']:.1f} / "
            f"{per_turn['read_jobs']:.1f}",
        )
    )
    rows.append(
        (
            "per echo turn: read jobs handed to a reader thread",
            f"{per_turn.get('read_hops', per_turn['read_jobs']):.1f} "
            "(the others run on the event loop)",
        )
    )
    rows.append(
        (
            "per echo turn: SQL statements written / read",
            f"{per_turn['write_statements']:.1f} / {per_turn['read_statements']:.1f}",
        )
    )
    base50, base99 = bench.percentile(fresh, 0.5), bench.percentile(fresh, 0.99)
    rows.append(("turn p50 / p99, fresh database", f"{base50 * 1000:.1f} / {base99 * 1000:.1f} ms"))
    for name, values in (
        (f"new session, database with {seeded:,} turns", large),
        (f"the {BIG_SESSION_TURNS + args.turns:,}-turn session", long_session),
    ):
        p50, p99 = bench.percentile(values, 0.5), bench.percentile(values, 0.99)
        rows.append(
            (
                f"turn p50 / p99, {name}",
                f"{p50 * 1000:.1f} / {p99 * 1000:.1f} ms (p50 ratio to fresh {p50 / base50:.2f})",
            )
        )
    width = max(len(name) for name, _ in rows)
    print(f"{'metric'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
