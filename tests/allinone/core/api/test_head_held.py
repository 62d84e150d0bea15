"""A response's head and its body's first write, made in the same loop step, leave as
one write on the connection; a head alone leaves when the step ends; order is kept."""

from __future__ import annotations

import asyncio

from allinone.core.api.fast_protocol import _HeadHeld


class Recording(asyncio.Transport):
    """asyncio's side of a connection, recording each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


async def next_step() -> None:
    await asyncio.sleep(0)  # lets the callbacks already scheduled run, nothing more


def test_a_head_and_its_body_in_one_step_are_one_write() -> None:
    async def scenario() -> None:
        transport = Recording()
        held = _HeadHeld(transport, asyncio.get_running_loop())
        held.write(b"HEAD\r\n\r\n")
        held.write(b"body")
        assert transport.writes == [b"HEAD\r\n\r\nbody"]
        await next_step()
        held.write(b"more")
        assert transport.writes == [b"HEAD\r\n\r\nbody", b"more"]

    asyncio.run(scenario())


def test_a_head_alone_leaves_when_its_step_ends_before_any_later_write() -> None:
    async def scenario() -> None:
        transport = Recording()
        held = _HeadHeld(transport, asyncio.get_running_loop())
        held.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        assert transport.writes == []
        await next_step()
        held.write(b"HEAD\r\n\r\n")
        assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n", b"HEAD\r\n\r\n"]

    asyncio.run(scenario())


def test_closing_writes_a_held_head_first() -> None:
    async def scenario() -> None:
        transport = Recording()
        held = _HeadHeld(transport, asyncio.get_running_loop())
        held.write(b"HEAD\r\n\r\n")
        held.close()
        assert transport.writes == [b"HEAD\r\n\r\n"] and held.is_closing()
        await next_step()  # the step's end finds nothing left to write
        assert transport.writes == [b"HEAD\r\n\r\n"]

    asyncio.run(scenario())
