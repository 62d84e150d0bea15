"""Durable-path benchmarks (a script; pytest does not collect it).

Prints: end-to-end durable events per second for `/stream 2000` on 8 concurrent sessions
(harness delta -> committed journal row -> SSE client), as a ratio to a bare sqlite3
group-commit loop writing the same number of rows right after it (the median of three
such rounds, each shown); the database size after 10,000 turns (each a new session with
one echo turn) and the bytes per turn; the bytes per echo turn on sessions that already
exist (the compact journal's target: at most 2 KiB) with the growth per 10,000 such
turns; and list latency p50 for sessions and items at 1k and 100k rows.
All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # the shared server helpers beside this script

SESSIONS = 8
DELTAS = 2000
DURABLE_ROUNDS = 3
TURNS_FOR_SIZE = 10_000
TURNS_ON_SESSIONS = 2_000
TURN_BYTES_TARGET = 2048
LIST_SIZES = (1_000, 100_000)


def stream_session(port: int, text: str, counts: list[int], index: int) -> None:
    stream = bench.EventStream(
        port,
        "POST",
        "/v1/agents/sessions",
        {
            "agent": {"model": "scripted"},
            "environment": {"type": "none"},
            "input": text,
            "stream": True,
        },
    )
    deadline = time.monotonic() + 300
    try:
        event_type = ""
        while event_type != "agent.session.idle":
            event_type, _ = stream.next(deadline)
            if event_type == "agent.session.turn.output_text.delta":
                counts[index] += 1
    finally:
        stream.close()


def durable_events_per_second(port: int) -> tuple[float, int]:
    counts = [0] * SESSIONS
    threads = [
        threading.Thread(target=stream_session, args=(port, f"/stream {DELTAS}", counts, i))
        for i in range(SESSIONS)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return sum(counts) / elapsed, sum(counts)


async def bare_group_commit(path: Path, rows: int, writers: int = SESSIONS) -> float:
    """Rows per second for concurrent writers sharing group commits on a bare sqlite3
    connection, each batch run on the connection's own thread in one hand-off (the
    method corebox's writer uses, without corebox)."""
    thread = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t (session TEXT, seq INTEGER, payload TEXT)")
        return conn

    conn = await loop.run_in_executor(thread, connect)
    queue: asyncio.Queue[tuple[str, int, asyncio.Future[None]]] = asyncio.Queue()

    def commit(batch: list[tuple[str, int, asyncio.Future[None]]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        for session, seq, _ in batch:
            conn.execute("INSERT INTO t VALUES (?, ?, ?)", (session, seq, '{"delta": "x"}'))
        conn.execute("COMMIT")

    async def committer() -> None:
        while True:
            batch = [await queue.get()]
            while not queue.empty() and len(batch) < 64:
                batch.append(queue.get_nowait())
            await loop.run_in_executor(thread, commit, batch)
            for _, _, future in batch:
                future.set_result(None)

    async def writer(name: str) -> None:
        for seq in range(rows // writers):
            future: asyncio.Future[None] = loop.create_future()
            await queue.put((name, seq, future))
            await future

    task = asyncio.create_task(committer())
    started = time.perf_counter()
    await asyncio.gather(*(writer(f"s{i}") for i in range(writers)))
    elapsed = time.perf_counter() - started
    task.cancel()
    await loop.run_in_executor(thread, conn.close)
    thread.shutdown()
    return rows / elapsed


def post(port: int, path: str, body: object) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(body).encode(),
            headers={**bench.HEADERS, "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def run_turns(port: int, turns: int, workers: int = 8) -> None:
    def work(count: int) -> None:
        for _ in range(count):
            stream_session(port, "hello", [0], 0)

    threads = [threading.Thread(target=work, args=(turns // workers,)) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def database_bytes(data_dir: Path) -> int:
    """The database's size with its write-ahead log folded in."""
    conn = sqlite3.connect(data_dir / "corebox.db")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(p.stat().st_size for p in data_dir.glob("corebox.db*"))


def turns_on_sessions(port: int, turns: int, workers: int = 8) -> None:
    """`turns` one-line echo turns spread over `workers` sessions that already exist."""
    ids: list[str] = []
    for _ in range(workers):
        creation = bench.EventStream(
            port,
            "POST",
            "/v1/agents/sessions",
            {
                "agent": {"model": "scripted"},
                "environment": {"type": "none"},
                "input": "hi",
                "stream": True,
            },
        )
        try:
            deadline = time.monotonic() + 60
            event_type, event = creation.next(deadline)
            ids.append(str(event["session"]["id"]))  # type: ignore[index]
            while event_type != "agent.session.idle":
                event_type, _ = creation.next(deadline)
        finally:
            creation.close()

    def work(session_id: str) -> None:
        for _ in range(turns // workers):
            stream = bench.EventStream(port, "GET", f"/v1/agents/sessions/{session_id}/events")
            try:
                message = {
                    "type": "agent.session.input.message",
                    "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                }
                status = post(
                    port, f"/v1/agents/sessions/{session_id}/events", {"events": [message]}
                )
                if status != 202:
                    raise bench.BenchError(f"input answered {status}")
                deadline = time.monotonic() + 60
                while stream.next(deadline)[0] != "agent.session.idle":
                    pass
            finally:
                stream.close()

    threads = [threading.Thread(target=work, args=(session_id,)) for session_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def bytes_per_turn_on_sessions(argv: list[str], env: dict[str, str]) -> float:
    """Database growth per echo turn on existing sessions, measured past a warm-up."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with bench.serve(argv, env, work) as (server, _):
            turns_on_sessions(server.port, 200)
            before = database_bytes(work / "data")
            turns_on_sessions(server.port, TURNS_ON_SESSIONS)
            after = database_bytes(work / "data")
    return (after - before) / TURNS_ON_SESSIONS


def seed_lists(db_path: Path, rows: int) -> tuple[str, str]:
    """Insert `rows` sessions and `rows` items directly (a benchmark fixture)."""
    conn = sqlite3.connect(db_path)
    project = conn.execute("SELECT id FROM projects LIMIT 1").fetchone()[0]
    agent = json.dumps({"id": "agent_bench", "model": "scripted"})
    now = int(time.time())
    conn.executemany(
        "INSERT INTO sessions (id, project_id, agent_id, harness, created_at, last_active_at,"
        " agent, environment, metadata, vault_ids) VALUES (?, ?, 'agent_bench', 'scripted', ?,"
        " ?, ?, '{\"type\": \"none\"}', '{}', '[]')",
        [(f"sess_bench{rows}_{i:07d}", project, now + i, now + i, agent) for i in range(rows)],
    )
    session = f"sess_bench{rows}_0000000"
    conn.executemany(
        "INSERT INTO items (id, session_id, turn_id, position, created_at, type, status,"
        " payload) VALUES (?, ?, 'turn_bench', ?, ?, 'message', 'completed', ?)",
        [
            (
                f"msg_bench{rows}_{i:07d}",
                session,
                i + 1,
                now,
                json.dumps(
                    {
                        "role": "user",
                        "content": [{"type": "input_text", "text": "x"}],
                        "phase": None,
                    }
                ),
            )
            for i in range(rows)
        ],
    )
    conn.commit()
    conn.close()
    return project, session


def get_latency(port: int, path: str, repeats: int = 50) -> float:
    samples = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            conn.request("GET", path, headers=bench.HEADERS)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise bench.BenchError(f"GET {path} answered {response.status}")
            samples.append(time.perf_counter() - started)
    finally:
        conn.close()
    return bench.percentile(samples, 0.5)


def _runs(values: list[float], spec: str = ",.0f") -> str:
    return ", ".join(format(value, spec) for value in values)


def main() -> int:
    argv, env, label = bench.command()
    print(f"corebox durable-path benchmark ({label})")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rates: list[float] = []
        bares: list[float] = []
        with bench.serve(argv, env, work) as (server, _):
            # Each round runs corebox, then the bare loop on the same count: the machine's
            # drift falls on both sides of a ratio, and the median ratio is reported.
            for round_ in range(DURABLE_ROUNDS):
                rate, events = durable_events_per_second(server.port)
                rates.append(rate)
                bares.append(asyncio.run(bare_group_commit(work / f"bare{round_}.db", events)))
        ratios = [rate / bare for rate, bare in zip(rates, bares, strict=True)]
        print(
            f"  durable events/s, /stream {DELTAS} x {SESSIONS} sessions: "
            f"{statistics.median(rates):,.0f} ({events} events; median of {_runs(rates)})"
        )
        print(
            f"  bare sqlite3 group commit rows/s (same count): {statistics.median(bares):,.0f} "
            f"(median of {_runs(bares)})"
        )
        print(
            f"  ratio, median of {DURABLE_ROUNDS} rounds: {statistics.median(ratios):.2f} "
            f"(rounds: {_runs(ratios, '.2f')})"
        )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with bench.serve(argv, env, work) as (server, _):
            started = time.perf_counter()
            run_turns(server.port, TURNS_FOR_SIZE)
            elapsed = time.perf_counter() - started
        size = database_bytes(work / "data")
        print(
            f"  database after {TURNS_FOR_SIZE} echo turns: {size / 1024 / 1024:.1f} MiB, "
            f"{size / TURNS_FOR_SIZE / 1024:.2f} KiB per new session with one turn "
            f"({elapsed:.0f} s, {TURNS_FOR_SIZE / elapsed:.0f} turns/s over 8 clients)"
        )
    per_turn = bytes_per_turn_on_sessions(argv, env)
    verdict = "within" if per_turn <= TURN_BYTES_TARGET else "over"
    print(
        f"  bytes per echo turn on existing sessions: {per_turn:,.0f} "
        f"({verdict} the {TURN_BYTES_TARGET} target); growth per 10,000 turns: "
        f"{per_turn * 10_000 / 1024 / 1024:.1f} MiB"
    )
    for rows in LIST_SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            with bench.serve(argv, env, work) as (server, _):
                pass  # creates and migrates the database, then stops
            _, session = seed_lists(work / "data" / "corebox.db", rows)
            with bench.serve(argv, env, work) as (server, _):
                sessions_p50 = get_latency(server.port, "/v1/agents/sessions?limit=20")
                after = get_latency(
                    server.port,
                    f"/v1/agents/sessions?limit=20&after=sess_bench{rows}_{rows // 2:07d}",
                )
                items_p50 = get_latency(
                    server.port, f"/v1/agents/sessions/{session}/items?limit=20"
                )
            print(
                f"  list p50 at {rows:>7,} rows: sessions {sessions_p50 * 1000:.2f} ms "
                f"(mid-list cursor {after * 1000:.2f} ms), items {items_p50 * 1000:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
