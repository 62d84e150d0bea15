"""Slow clients are bounded, against a real uvicorn server on a loopback socket, on both
HTTP protocols the server runs (httptools' where it is installed, h11's otherwise): a
request head that does not arrive in time, or grows past its size limit, closes the
connection; a body that stalls is answered 408 and the connection closed; a 500 closes
its connection cleanly; a head with a large body in the same read is served."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from allinone.app import _Server
from allinone.core.api.app import build_app
from allinone.core.api.bodies import read_body
from allinone.core.api.errors import ApiError
from allinone.core.api.fast_protocol import BoundedHttpToolsProtocol
from allinone.core.api.h11_protocol import BoundedH11Protocol
from allinone.core.api.protocol import MAX_HEADER_BYTES, http_protocol
from allinone.startup import bind

DEADLINE = 0.3
TOTAL = 1.0
WAIT = 10.0


Protocol = type[BoundedH11Protocol] | type[BoundedHttpToolsProtocol]


@pytest.fixture(params=[BoundedH11Protocol, BoundedHttpToolsProtocol], ids=["h11", "httptools"])
def protocol(request: pytest.FixtureRequest) -> Protocol:
    base: Protocol = request.param
    return type("QuickProtocol", (base,), {"header_seconds": DEADLINE})


def patient(protocol: Protocol) -> Protocol:
    """The size limit, not the deadline, ends a trickling head."""
    return type("PatientProtocol", (protocol,), {"header_seconds": WAIT})


async def echo(request: Request) -> Response:
    return Response(await read_body(request, 1024))


async def echo_large(request: Request) -> Response:
    return Response(await read_body(request, 1024 * 1024))


async def boom(request: Request) -> Response:
    raise RuntimeError("an unforeseen failure")


async def refused(request: Request) -> Response:
    raise ApiError(500, "A failure the handler reports itself.", code="internal_error")


@asynccontextmanager
async def serving(protocol: Protocol) -> AsyncIterator[int]:
    sock = bind("127.0.0.1", 0)
    routes: list[BaseRoute] = [
        Route("/echo", echo, methods=["POST"]),
        Route("/large", echo_large, methods=["POST"]),
        Route("/boom", boom, methods=["GET"]),
        Route("/refused", refused, methods=["GET"]),
    ]
    app = build_app(routes, body_idle_seconds=DEADLINE, body_total_seconds=TOTAL)
    config = uvicorn.Config(
        app,
        log_config=None,
        lifespan="off",
        http=protocol,
        timeout_keep_alive=60,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
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


def test_a_request_head_that_trickles_in_is_cut_off(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\n")  # never finished
            await writer.drain()
            assert await read_all(reader) == b""  # closed without an answer
            writer.close()

    asyncio.run(main())


def test_the_head_deadline_rearms_after_each_response_but_spares_a_slow_handler(
    protocol: Protocol,
) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
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


def test_a_body_that_stalls_is_answered_408_and_closed(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
            await writer.drain()
            answer = await read_all(reader)
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408")
            assert b"connection: close" in head.lower()
            assert json.loads(body)["error"]["code"] == "request_timeout"
            writer.close()

    asyncio.run(main())


def test_a_body_past_the_limit_is_a_413_before_it_is_read(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
            await writer.drain()
            answer = await read_all(reader)
            assert answer.startswith(b"HTTP/1.1 413")
            writer.close()

    asyncio.run(main())


@pytest.mark.parametrize("path", ["/boom", "/refused"])
def test_a_500_closes_its_connection_cleanly(protocol: Protocol, path: str) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            await writer.drain()
            answer = await read_all(reader)  # ends: the server closed the connection
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 500")
            assert b"connection: close" in head.lower()
            assert json.loads(body)["error"]["code"] == "internal_error"
            writer.close()

    asyncio.run(main())


def test_a_body_that_trickles_in_is_cut_off_at_the_whole_body_deadline(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            answer = asyncio.create_task(read_all(reader))
            sent = 0
            while not answer.done() and sent < 1000:
                writer.write(b"x")  # one byte well inside each idle deadline
                await writer.drain()
                sent += 1
                await asyncio.wait({answer}, timeout=DEADLINE / 3)  # the client's pace
            head, _, body = (await answer).partition(b"\r\n\r\n")
            assert sent < 1000
            assert head.startswith(b"HTTP/1.1 408")
            assert json.loads(body)["error"]["code"] == "request_timeout"
            writer.close()

    asyncio.run(main())


def test_a_request_head_past_its_size_limit_is_refused_and_closed(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            # A head still growing past the limit, before its end has arrived.
            padding = b"X-Padding: " + b"a" * MAX_HEADER_BYTES
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\n" + padding)
            await writer.drain()
            assert (await read_all(reader)).startswith(b"HTTP/1.1 400")
            writer.close()

    asyncio.run(main())


def test_a_whole_head_past_its_size_limit_in_one_read_is_refused_431_and_closed(
    protocol: Protocol,
) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            # Just past the limit, counted as sent: the request line and every header.
            padding = MAX_HEADER_BYTES - len(head) - len(b"X-Padding: \r\n\r\n") + 1
            writer.write(head + b"X-Padding: " + b"a" * padding + b"\r\n\r\nok")
            await writer.drain()
            status, _, body = (await read_all(reader)).partition(b"\r\n\r\n")
            assert status.startswith(b"HTTP/1.1 431")
            assert json.loads(body)["error"]["code"] == "request_header_fields_too_large"
            writer.close()

    asyncio.run(main())


def test_a_whole_head_at_its_size_limit_is_served(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            padding = MAX_HEADER_BYTES - len(head) - len(b"X-Padding: \r\n\r\n")
            writer.write(head + b"X-Padding: " + b"a" * padding + b"\r\n\r\nok")
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(b"ok"), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.close()

    asyncio.run(main())


def test_a_head_trickling_past_its_size_limit_is_refused(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(patient(protocol)) as port:
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


def test_a_head_with_a_large_body_in_one_read_is_served(protocol: Protocol) -> None:
    async def main() -> None:
        async with serving(protocol) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b"b" * (4 * MAX_HEADER_BYTES)
            head = f"POST /large HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(body), WAIT)
            assert answer.startswith(b"HTTP/1.1 200")
            writer.close()

    asyncio.run(main())


def test_a_pipelined_head_after_a_large_body_in_the_same_read_is_served(
    protocol: Protocol,
) -> None:
    async def main() -> None:
        async with serving(patient(protocol)) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b"b" * (4 * MAX_HEADER_BYTES)  # more than a head may be
            first = f"POST /large HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
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


def test_the_server_prefers_httptools_where_it_is_installed() -> None:
    assert http_protocol() is BoundedHttpToolsProtocol
