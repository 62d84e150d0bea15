"""Lifecycle: stops run in reverse, each cut at one deadline, none skipped."""

from __future__ import annotations

import asyncio

import pytest

from allinone.lifecycle import Lifecycle


def test_stops_run_in_reverse_order_of_registration() -> None:
    stopped: list[str] = []

    async def stop_b() -> None:
        stopped.append("b")

    async def main() -> None:
        async with Lifecycle(5.0) as life:
            life.on_stop_sync("a", lambda: stopped.append("a"))
            life.on_stop("b", stop_b)
            life.on_stop_sync("c", lambda: stopped.append("c"))

    asyncio.run(main())
    assert stopped == ["c", "b", "a"]


def test_a_step_past_the_deadline_is_cut_and_the_steps_after_it_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopped: list[str] = []

    async def forever() -> None:
        await asyncio.Event().wait()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        async with Lifecycle(0.2) as life:
            life.on_stop_sync("storage", lambda: stopped.append("storage"))
            life.on_stop("stuck", forever)
            life.on_stop_sync("first", lambda: stopped.append("first"))
            began = loop.time()
        return loop.time() - began

    elapsed = asyncio.run(main())
    assert stopped == ["first", "storage"]
    assert elapsed < 5.0  # cut at 0.2 s; the margin is for a loaded machine
    assert "stopping stuck ran past" in caplog.text


def test_a_failing_step_is_logged_and_does_not_stop_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopped: list[str] = []

    async def broken() -> None:
        raise RuntimeError("cannot close")

    async def main() -> None:
        async with Lifecycle(5.0) as life:
            life.on_stop_sync("last", lambda: stopped.append("last"))
            life.on_stop("broken", broken)
            life.on_stop_sync("sync broken", lambda: 1 / 0)

    asyncio.run(main())
    assert stopped == ["last"]
    assert "stopping broken failed" in caplog.text and "stopping sync broken" in caplog.text


def test_a_start_up_failure_stops_only_what_started_and_propagates() -> None:
    stopped: list[str] = []

    async def main() -> None:
        async with Lifecycle(5.0) as life:
            life.on_stop_sync("socket", lambda: stopped.append("socket"))
            raise OSError("the database cannot be opened")

    with pytest.raises(OSError, match="database"):
        asyncio.run(main())
    assert stopped == ["socket"]


def test_an_owned_task_is_cancelled_and_awaited() -> None:
    async def main() -> asyncio.Task[None]:
        entered = asyncio.Event()

        async def work() -> None:
            entered.set()
            await asyncio.Event().wait()

        async with Lifecycle(5.0) as life:
            task = asyncio.create_task(work(), name="worker")
            life.own(task)
            await entered.wait()
        return task

    task = asyncio.run(main())
    assert task.cancelled()


def test_cancelling_the_stopper_still_runs_every_step_and_propagates() -> None:
    stopped: list[str] = []

    async def main() -> None:
        entered = asyncio.Event()

        async def slow() -> None:
            entered.set()
            await asyncio.Event().wait()

        async def stopper() -> None:
            async with Lifecycle(30.0) as life:
                life.on_stop_sync("storage", lambda: stopped.append("storage"))
                life.on_stop("slow", slow)

        task = asyncio.create_task(stopper())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert stopped == ["storage"]
