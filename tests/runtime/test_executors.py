"""The Executor pool: ownership lasts until a close succeeded, idle Executors are reused
by their Session and make room for new ones, and an Environment's Executors close with
it. Driven on a real event loop with Executors that implement the interface."""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from runtime.executors import ExecutorPool
from runtime.harness.base import RunContext
from runtime.proto import limits
from runtime.proto.capabilities import CAPABILITY_FIELDS, AgentKindCapabilities
from runtime.proto.inputs import MessageInput
from runtime.timers import Timers

DECLARED = AgentKindCapabilities(**{name: False for name in CAPABILITY_FIELDS})


class Native:
    """An Executor whose close succeeds unless told to fail; it records closes."""

    def __init__(self, executor_id: str, fail_close: bool = False) -> None:
        self.executor_id = executor_id
        self.fail_close = fail_close
        self.closes = 0
        self.closed = asyncio.Event()

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        raise AssertionError("not run in these tests")

    async def close(self) -> None:
        self.closes += 1
        self.closed.set()
        if self.fail_close:
            raise OSError("native process did not exit")


class Owner:
    """Owns the pool's closing tasks, as the dispatcher does."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        async def guarded() -> None:
            with contextlib.suppress(OSError):  # a failed close; the pool keeps it owned
                await work()

        self.tasks.add(asyncio.create_task(guarded()))

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)


def _pool(owner: Owner, idle_seconds: float = 60.0) -> ExecutorPool:
    return ExecutorPool(Timers(executor_idle=idle_seconds), owner.spawn)


def test_an_idle_executor_is_reused_by_its_session_only() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner)
        pool.add("e1", Native("e1"), DECLARED, "")
        pool.return_idle(("s1", "cfg"), "e1")
        assert not pool.reusable(("s2", "cfg"))
        assert pool.take_idle(("s2", "cfg")) is None
        assert pool.reusable(("s1", "cfg"))
        assert pool.take_idle(("s1", "cfg")) == "e1"
        assert pool.take_idle(("s1", "cfg")) is None  # busy now
        await pool.close_all()

    asyncio.run(main(), debug=True)


def test_room_is_made_by_closing_the_oldest_idle_executor() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner)
        natives = [Native(f"e{n}") for n in range(limits.MAX_EXECUTORS)]
        for n, native in enumerate(natives):
            pool.add(native.executor_id, native, DECLARED, "")
            if n < 2:
                pool.went_idle((f"s{n}", "cfg"), native.executor_id)
        assert await pool.make_room(active_preparations=0)
        assert (natives[0].closes, natives[1].closes) == (1, 0)
        assert len(pool) == limits.MAX_EXECUTORS - 1
        assert not await pool.make_room(active_preparations=2)  # the idle one is not enough
        await pool.close_all()

    asyncio.run(main(), debug=True)


def test_an_executor_whose_close_failed_stays_owned_and_counted() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner)
        stuck = Native("stuck", fail_close=True)
        pool.add("stuck", stuck, DECLARED, "")
        pool.went_idle(("s", "cfg"), "stuck")
        assert not await pool.make_room(active_preparations=limits.MAX_EXECUTORS - 1)
        assert len(pool) == 1
        assert pool.take_idle(("s", "cfg")) is None  # never reused after a failed close
        assert not await pool.close_all()
        stuck.fail_close = False
        assert await pool.close_all()
        assert len(pool) == 0

    asyncio.run(main(), debug=True)


def test_an_executor_idle_past_its_timer_is_closed() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner, idle_seconds=0.01)
        native = Native("e1")
        pool.add("e1", native, DECLARED, "")
        pool.return_idle(("s", "cfg"), "e1")
        await native.closed.wait()
        await owner.settle()
        assert len(pool) == 0
        assert not pool.reusable(("s", "cfg"))

    asyncio.run(main(), debug=True)


def test_an_environments_executors_close_with_it_and_leave_the_idle_set() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner)
        inside, outside = Native("in"), Native("out")
        pool.add("in", inside, DECLARED, "env-1")
        pool.add("out", outside, DECLARED, "env-2")
        pool.went_idle(("s", "cfg"), "in")
        pool.close_environment("env-1")
        assert not pool.reusable(("s", "cfg"))
        await owner.settle()
        assert (inside.closes, outside.closes) == (1, 0)
        assert pool.get("in") is None and pool.get("out") is outside
        await pool.close_all()

    asyncio.run(main(), debug=True)


def test_returning_a_second_idle_executor_for_a_session_closes_the_first() -> None:
    async def main() -> None:
        owner = Owner()
        pool = _pool(owner)
        first, second = Native("e1"), Native("e2")
        pool.add("e1", first, DECLARED, "")
        pool.add("e2", second, DECLARED, "")
        pool.return_idle(("s", "cfg"), "e1")
        pool.return_idle(("s", "cfg"), "e2")
        await owner.settle()
        assert (first.closes, second.closes) == (1, 0)
        assert pool.take_idle(("s", "cfg")) == "e2"
        await pool.close_all()

    asyncio.run(main(), debug=True)
