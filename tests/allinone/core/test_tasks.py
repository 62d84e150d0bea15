"""cancel_and_wait: the child's end is consumed, the caller's own cancellation never is."""

from __future__ import annotations

import asyncio

import pytest

from allinone.core.tasks import cancel_and_wait


def test_a_cancelled_child_is_awaited_and_its_cancellation_consumed() -> None:
    async def main() -> None:
        entered = asyncio.Event()

        async def child() -> None:
            entered.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(child())
        await entered.wait()
        assert await cancel_and_wait(task) is True
        assert task.cancelled()

    asyncio.run(main())


def test_a_child_that_failed_is_consumed_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async def child() -> None:
            raise ValueError("boom")

        task = asyncio.create_task(child(), name="failing-child")
        await asyncio.wait({task})
        assert await cancel_and_wait(task) is True

    asyncio.run(main())
    assert "failing-child" in caplog.text and "boom" in caplog.text


def test_a_child_that_ignores_cancellation_is_bounded_by_the_timeout() -> None:
    async def main() -> None:
        release = asyncio.Event()
        entered = asyncio.Event()

        async def stubborn() -> None:
            entered.set()
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue

        task = asyncio.create_task(stubborn())
        await entered.wait()
        assert await cancel_and_wait(task, timeout=0.05) is False
        release.set()
        await task

    asyncio.run(main())


def test_the_callers_own_cancellation_propagates() -> None:
    async def main() -> None:
        release = asyncio.Event()
        child_entered = asyncio.Event()
        stopping = asyncio.Event()
        after: list[str] = []

        async def stubborn() -> None:
            child_entered.set()
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue

        child = asyncio.create_task(stubborn())

        async def stopper() -> None:
            await child_entered.wait()
            stopping.set()
            await cancel_and_wait(child)
            after.append("carried on")  # must never run: the stopper was cancelled

        outer = asyncio.create_task(stopper())
        await stopping.wait()
        # The stopper set `stopping` and went straight into cancel_and_wait's wait.
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        assert after == []
        release.set()
        await child

    asyncio.run(main())
