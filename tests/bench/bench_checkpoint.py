"""Checkpoint benchmark (a script; pytest does not collect it).

Prints the cost of committing a checkpoint: the projector applying a scripted harness's
`checkpoint` frame for a running turn, alone in a group-committed transaction on a real
SQLite file (`synchronous=FULL`), against the same transaction renewing the lease only;
the cost a checkpoint adds inside a projection batch of 16 deltas; and the size of the
scripted harness's resume cursor. Timing figures only, never assertions.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.projector import Projector, RunProjection
from allinone.core.recorder import Recorder
from runtime.proto import run as wire
from runtime.proto.codec import Frame
from storage import Database, leases, sessions, turns
from storage.database import Tx

ROUNDS = 500
CURSOR = (
    '{"v":1,"lines":[["say","b"],["sleep","1500"],["say","c"]],"values":{},'
    '"words":[9,1],"usage":false,"waiting":null}'
)


async def _turn(db: Database) -> None:
    async def job(tx: Tx) -> None:
        await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
        await sessions.insert(
            tx,
            {
                "id": "s",
                "project_id": "p",
                "agent_id": "a",
                "harness": "scripted",
                "created_at": 0,
                "agent": {},
                "environment": {"type": "none"},
                "metadata": {},
                "vault_ids": [],
            },
        )
        await turns.insert(tx, "t", "s", "a", 0)
        await turns.transition(
            tx, "t", ("queued",), "in_progress", fields={"fencing_token": "1", "started_at": 1}
        )

    await db.write(job)


async def _timed(db: Database, job: Callable[[Tx], Awaitable[None]]) -> list[float]:
    samples = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        await db.write(job)
        samples.append(time.perf_counter() - began)
    return samples


async def measure(path: Path) -> list[tuple[str, str]]:
    db = await Database.open(path)
    await _turn(db)
    clock = Clock()
    ids = Ids(clock)
    projector = Projector(Recorder(Hub(), ids, clock), ids, clock)
    run = RunProjection("s", "t", "1")
    checkpoint = Frame(
        "checkpoint", "t", wire.Checkpoint(boundary="between_model_calls", cursor=CURSOR), ""
    )
    usage = Frame("usage", "t", wire.Usage(), "")

    async def renew(tx: Tx) -> None:
        await projector.check_fence(tx, run)
        await leases.renew(tx, "t", clock.now() + 30)

    async def renew_and_checkpoint(tx: Tx) -> None:
        await renew(tx)
        await projector.apply(tx, run, checkpoint)

    async def in_batch(tx: Tx, with_checkpoint: bool) -> None:
        await renew(tx)
        for _ in range(16):
            await projector.apply(tx, run, usage)
        if with_checkpoint:
            await projector.apply(tx, run, checkpoint)

    bare = await _timed(db, renew)
    alone = await _timed(db, renew_and_checkpoint)
    batch = await _timed(db, lambda tx: in_batch(tx, False))
    batch_cp = await _timed(db, lambda tx: in_batch(tx, True))
    await db.close()

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.3f} ms"

    added = statistics.median(batch_cp) - statistics.median(batch)
    return [
        (f"commit: lease renewal only (p50 of {ROUNDS})", ms(bare)),
        (f"commit: lease renewal + checkpoint (p50 of {ROUNDS})", ms(alone)),
        ("checkpoint cost inside a 16-frame batch (p50 delta)", f"{added * 1e6:.0f} us"),
        ("scripted resume cursor size", f"{len(CURSOR.encode())} bytes"),
    ]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir:
        rows = asyncio.run(measure(Path(workdir) / "bench.db"))
    print("corebox checkpoint benchmark (real SQLite file, synchronous=FULL)")
    width = max(len(name) for name, _ in rows)
    print(f"{'metric'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
