"""corebox benchmark: echo turns per second with one and with two Core processes on one
PostgreSQL database. A script, not a test.

    COREBOX_BINARY=/abs/path/dist/corebox python tests/bench/bench_cluster.py [--turns 400]

Without COREBOX_BINARY it runs `python -m allinone serve` from this checkout instead. A
throw-away PostgreSQL server is started for it (tests/support/postgres.py: Debian's
binaries, installed when missing); each measurement gets a fresh database and data
directory. `--clients` clients (16 by default) each run one-line echo turns of the
scripted harness on a session of their own, one after another (the next input once the
turn completed), spread over the processes in turn; each process has its in-process
Runtime. The figure is all the turns divided by the wall-clock time from the first input
to the last completion. All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))
import bench  # the shared server helpers beside this script

from tests.support.postgres import Cluster, ensure_installed


@contextlib.contextmanager
def serving(
    argv: list[str], env: dict[str, str], workdir: Path, url: str, count: int
) -> Iterator[list[int]]:
    """`count` servers on the database `url` sharing one data directory; their ports."""
    processes: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for n in range(count):
            port = bench.free_port()
            with (workdir / f"corebox-{n}.log").open("wb") as sink:
                processes.append(
                    subprocess.Popen(
                        [*argv, "serve", "--port", str(port), "--data-dir", str(workdir / "data")],
                        cwd=workdir,
                        env={**env, "COREBOX_DATABASE_URL": url},
                        stdin=subprocess.DEVNULL,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            _ready(processes[-1], port)
            ports.append(port)
        yield ports
    finally:
        for process in reversed(processes):
            bench.stop(process)


def _ready(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + bench.READY_DEADLINE_SECONDS
    while bench.readyz(port) != 200:
        if time.monotonic() > deadline:
            raise bench.BenchError("a server was not ready in time")
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = process.wait(timeout=bench.POLL_SECONDS)
            raise bench.BenchError(f"a server exited with {code} before it was ready")


def turns_per_second(ports: list[int], turns: int, clients: int) -> float:
    counts = [turns // clients + (1 if n < turns % clients else 0) for n in range(clients)]
    targets = [ports[n % len(ports)] for n in range(clients)]
    with ThreadPoolExecutor(clients) as pool:
        sessions = list(pool.map(bench.new_session, targets))
        started = time.perf_counter()
        done = list(pool.map(bench.turn_latencies, targets, counts, sessions))
        elapsed = time.perf_counter() - started
    return sum(len(latencies) for latencies in done) / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="echo turns per measurement")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    args = parser.parse_args()
    bindir = ensure_installed()
    if bindir is None:
        print("bench: PostgreSQL is not installed and cannot be installed here", file=sys.stderr)
        return 1
    argv, env, label = bench.command()
    rows: list[tuple[str, str]] = [("server", label), ("clients", str(args.clients))]
    cluster = Cluster.start(bindir)
    try:
        for count in (1, 2):
            with (
                tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir,
                serving(argv, env, Path(workdir), cluster.fresh_database(), count) as ports,
            ):
                rate = turns_per_second(ports, args.turns, args.clients)
            name = "1 Core process" if count == 1 else f"{count} Core processes"
            rows.append((f"PostgreSQL, {name}: echo turns/s", f"{rate:.1f}"))
    except bench.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
