"""`Coalesced` over a real loopback TCP connection: the writes of one loop step reach
the socket as one write at the step's end, in order; the held bytes count in the write
buffer; a write reaching the high-water mark goes out at once; close and write_eof pass
on what is held first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from runtime.coalesce import Coalesced

FRAMES = [b"\x82\x05hello", b"\x82\x01!", b"\x82\x03end"]


class _Recorder(asyncio.Protocol):
    def __init__(self) -> None:
        self.paused = 0

    def pause_writing(self) -> None:
        self.paused += 1


@asynccontextmanager
async def _pair() -> AsyncIterator[tuple[Coalesced, asyncio.StreamReader, _Recorder]]:
    """A client transport wrapped in `Coalesced` and the server's reader of its bytes."""
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        loop.create_future()
    )

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result((reader, writer))

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport, protocol = await loop.create_connection(_Recorder, "127.0.0.1", port)
    reader, writer = await accepted
    try:
        yield Coalesced(transport, loop), reader, protocol
    finally:
        transport.close()
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()


async def _after_step(call: Callable[[], object]) -> object:
    """What `call` returns when run after the callbacks the current step scheduled."""
    done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(lambda: done.set_result(call()))
    return await done


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(main())


def test_one_steps_writes_are_held_counted_and_written_together_at_its_end() -> None:
    async def main() -> None:
        async with _pair() as (coalesced, reader, _):
            for frame in FRAMES:
                coalesced.write(frame)
            held = sum(map(len, FRAMES))
            assert coalesced.get_write_buffer_size() == held  # nothing reached the socket
            assert coalesced.wrapped.get_write_buffer_size() == 0
            after = await _after_step(coalesced.get_write_buffer_size)
            assert after == coalesced.wrapped.get_write_buffer_size() == 0  # written
            assert await reader.readexactly(held) == b"".join(FRAMES)

    _run(main)


def test_a_write_reaching_the_high_water_mark_goes_out_at_once_with_what_is_held() -> None:
    async def main() -> None:
        async with _pair() as (coalesced, reader, _):
            coalesced.set_write_buffer_limits(high=16, low=0)
            coalesced.write(FRAMES[0])
            assert coalesced.get_write_buffer_size() == len(FRAMES[0])
            coalesced.write(b"x" * 16)  # held + this > 16: passed on now, in order
            assert coalesced.get_write_buffer_size() == coalesced.wrapped.get_write_buffer_size()
            assert await reader.readexactly(len(FRAMES[0]) + 16) == FRAMES[0] + b"x" * 16

    _run(main)


def test_a_peer_that_does_not_read_pauses_the_writer_as_the_transport_would() -> None:
    async def main() -> None:
        async with _pair() as (coalesced, reader, recorder):
            coalesced.set_write_buffer_limits(high=1024, low=0)
            chunk = b"y" * 512
            sent = 0
            while not recorder.paused:  # the kernel's buffers fill, then asyncio's
                coalesced.write(chunk)
                sent += len(chunk)
            assert coalesced.get_write_buffer_size() > 1024
            assert await reader.readexactly(sent) == chunk * (sent // len(chunk))

    _run(main)


def test_close_and_write_eof_write_what_is_held_first() -> None:
    async def main() -> None:
        async with _pair() as (coalesced, reader, _):
            coalesced.write(FRAMES[0])
            coalesced.write_eof()
            assert await reader.read() == FRAMES[0]
        async with _pair() as (coalesced, reader, _):
            coalesced.write(FRAMES[1])
            coalesced.write(FRAMES[2])
            coalesced.close()
            assert coalesced.is_closing()
            assert await reader.read() == FRAMES[1] + FRAMES[2]

    _run(main)
