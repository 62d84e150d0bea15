"""Turns per second with Core on PostgreSQL (a script, not a test).

    COREBOX_BINARY=/abs/path/dist/corebox python tests/bench/bench_postgres.py \
        [--clients 16] [--turns 25]

Starts a throw-away PostgreSQL server (tests/support/postgres.py: Debian's package,
installed when missing; fsync on), then one `corebox serve` on a fresh database on it,
and drives `--clients` concurrent clients, each on a session of its own, each sending
`--turns` one-line echo turns one after another (the next input after
`agent.session.idle`). The figure is completed turns over the wall-clock time from the
first input to the last turn's completion. The same load on the embedded SQLite store
is reported beside it, as the reference. `throughput(ports, ...)` spreads the clients
over several Core processes (round robin) for the figures with more than one.
All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import bench  # the shared server helpers beside this script

from tests.support.postgres import Cluster, ensure_installed


def throughput(ports: list[int], clients: int, turns: int) -> tuple[float, float]:
    """(turns per second, p50 turn latency in ms) for `clients` clients spread over the
    servers on `ports`, each running `turns` turns on a session of its own."""
    sessions = [bench.new_session(ports[n % len(ports)]) for n in range(clients)]
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
        runs = [
            pool.submit(bench.turn_latencies, ports[n % len(ports)], turns, session)
            for n, session in enumerate(sessions)
        ]
        latencies = [value for run in runs for value in run.result()]
    elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, bench.percentile(latencies, 0.5) * 1000


@contextlib.contextmanager
def core(workdir: Path, database_url: str | None) -> Iterator[int]:
    """One `corebox serve` (on PostgreSQL when `database_url` is given); its port."""
    argv, env, _ = bench.command()
    if database_url is not None:
        env["COREBOX_DATABASE_URL"] = database_url
    with bench.serve(argv, env, workdir) as (server, _):
        yield server.port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--turns", type=int, default=25, help="turns per client")
    args = parser.parse_args()
    bindir = ensure_installed()
    if bindir is None:
        print("bench: PostgreSQL is not installed and cannot be installed here", file=sys.stderr)
        return 1
    _, _, label = bench.command()
    rows: list[tuple[str, str]] = [
        ("server", label),
        ("load", f"{args.clients} clients x {args.turns} turns"),
    ]
    cluster = Cluster.start(bindir)
    try:
        for name, url in (("sqlite", None), ("postgresql, 1 Core", cluster.fresh_database())):
            with (
                tempfile.TemporaryDirectory(prefix="corebox-bench-") as work,
                core(Path(work), url) as port,
            ):
                rate, p50 = throughput([port], args.clients, args.turns)
            rows.append((f"turns/s ({name})", f"{rate:.1f}  (p50 {p50:.0f} ms)"))
    except bench.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    width = max(len(name) for name, _ in rows)
    print(f"{'metric'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
