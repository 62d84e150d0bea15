"""The httptools protocol the server prefers is bounded as the h11 one is, against a real
uvicorn server on a loopback socket: a request head that does not arrive in time, or
grows past its size limit, is cut off; a head in time, and a head with a large body in
the same packet, are served; the head deadline re-arms after each response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.app import _Server
from allinone.core.api.app import build_app
from allinone.core.api.bodies import read_body
from allinone.core.api.fast_protocol import BoundedHttpToolsProtocol
from allinone.core.api.protocol import MAX_HEADER_BYTES, http_protocol
from allinone.startup import bind

DEADLINE = 0.3
WAIT = 10.0


class QuickProtocol(BoundedHttpToolsProtocol):
    header_seconds = DEADLINE


async def echo(request: Request) -> Response:
    return Response(await read_body(request, 1024 * 1024))


class PatientProtocol(BoundedHttpToolsProtocol):
    header_seconds = WAIT  # the size limit, not the deadline, ends a trickling head


@asynccontextmanager
async def serving(protocol: type[BoundedHttpToolsProtocol] = QuickProtocol) -> AsyncIterator[int]:
    sock = bind("127.0.0.1", 0)
    app = build_app([Route("/echo", echo, methods=["POST"])], body_idle_seconds=DEADLINE)
    config = uvicorn.Config(
        app, log_config=None, lifespan="off", http=protocol, timeout_keep_alive=60
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await asyncio.wait_for(server.listening.wait(), WAIT)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task
        sock.close()


async def read_all(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), WAIT)  # until the server closes


def test_the_server_prefers_httptools_where_it_is_installed() -> None:
    assert http_protocol() is BoundedHttpToolsProtocol


def test_an_unfinished_request_head_is_cut_off() -> None:
    async def main() -> None:
        async with serving() as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\n")  # never finished
            await writer.drain()
            assert await read_all(reader) == b""  # closed without an answer
            writer.close()

    asyncio.run(main())


def test_a_request_head_past_its_size_limit_is_refused_and_closed() -> None:
    async def main() -> None:
        async with serving() as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            # A head still growing past the limit, before its end has arrived.
            padding = b"X-Padding: " + b"a" * MAX_HEADER_BYTES
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\n" + padding)
            await writer.drain()
            assert (await read_all(reader)).startswith(b"HTTP/1.1 400")
            writer.close()

    asyncio.run(main())


def test_a_head_trickling_past_its_size_limit_is_refused() -> None:
    async def main() -> None:
        async with serving(PatientProtocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\n")
            answer = asyncio.create_task(read_all(reader))
            sent = 0
            while not answer.done() and sent <= MAX_HEADER_BYTES:
                writer.write(b"X-Pad: " + b"a" * 4089 + b"\r\n")  # 4 KiB header lines
                await writer.drain()
                sent += 4098
                await asyncio.wait({answer}, timeout=DEADLINE / 10)
            assert (await answer).startswith(b"HTTP/1.1 400")
            assert sent <= MAX_HEADER_BYTES + 4098
            writer.close()

    asyncio.run(main())


def test_a_head_with_a_large_body_in_one_packet_is_served() -> None:
    async def main() -> None:
        async with serving() as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b"b" * (4 * MAX_HEADER_BYTES)
            head = f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(body), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.close()

    asyncio.run(main())


def test_the_head_deadline_rearms_after_each_response() -> None:
    async def main() -> None:
        async with serving() as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(b"ok"), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.write(b"POST /echo HTTP/1.1\r\n")  # a second head that never ends
            await writer.drain()
            assert await read_all(reader) == b""
            writer.close()

    asyncio.run(main())


def test_a_pipelined_head_after_a_large_body_in_the_same_read_is_served() -> None:
    async def main() -> None:
        async with serving(PatientProtocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b"b" * (4 * MAX_HEADER_BYTES)  # more than a head may be
            first = f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            second = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
            writer.write(first.encode() + body + second[:12])  # the second head begins
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(body), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.write(second[12:])
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(b"ok"), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.close()

    asyncio.run(main())
