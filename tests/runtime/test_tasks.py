"""cancel_and_wait stops children without ever swallowing the caller's own cancellation."""

import asyncio

import pytest

from runtime.tasks import cancel_and_wait


def test_a_child_is_cancelled_and_awaited_and_the_caller_goes_on() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def child() -> None:
            started.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(child())
        await started.wait()
        await cancel_and_wait(task)
        assert task.cancelled()

    asyncio.run(main(), debug=True)


def test_a_child_failing_as_it_stops_is_absorbed() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def child() -> None:
            try:
                started.set()
                await asyncio.Event().wait()
            finally:
                raise RuntimeError("cleanup failed")

        task = asyncio.create_task(child())
        await started.wait()
        await cancel_and_wait(task)
        assert isinstance(task.exception(), RuntimeError)

    asyncio.run(main(), debug=True)


def test_the_callers_own_cancellation_while_waiting_is_raised() -> None:
    async def main() -> None:
        settling, release, waiting = asyncio.Event(), asyncio.Event(), asyncio.Event()
        after_wait = False

        async def slow_child() -> None:
            try:
                waiting.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                settling.set()
                await release.wait()

        async def caller(child: asyncio.Task[None]) -> None:
            nonlocal after_wait
            await cancel_and_wait(child)
            after_wait = True

        child = asyncio.create_task(slow_child())
        await waiting.wait()
        outer = asyncio.create_task(caller(child))
        await settling.wait()
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        assert not after_wait
        release.set()
        await child

    asyncio.run(main(), debug=True)


def test_cleanup_in_a_finally_after_the_callers_cancellation_still_runs() -> None:
    async def main() -> None:
        entered = asyncio.Event()
        cleaned = False

        async def caller() -> None:
            nonlocal cleaned
            child = asyncio.create_task(asyncio.Event().wait())
            try:
                entered.set()
                await asyncio.Event().wait()
            finally:
                await cancel_and_wait(child)
                cleaned = child.cancelled()

        outer = asyncio.create_task(caller())
        await entered.wait()
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        assert cleaned

    asyncio.run(main(), debug=True)
