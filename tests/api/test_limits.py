"""Request bodies are bounded while they are read: a 200 MB body sent to a 1 MiB route is
refused with a 413 in the API's error format, and the real server process grows by less
than 16 MiB doing so. Uploads have a larger limit of their own and stream to disk and
into the database without being held in memory."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import http
from tests.conftest import API_KEY, Server, start_server

MIB = 1024 * 1024
ROUTE = "/v1/vaults"  # a route whose body limit is 1 MiB
CHUNK = 64 * 1024
HEADERS = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own, so its memory reflects only what this module sends."""
    running = start_server(tmp_path_factory.mktemp("limits") / "data")
    yield running
    running.stop()


def memory_kib(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def head(method: str, path: str, extra: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *_lines({**HEADERS, **extra})]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _lines(headers: dict[str, str]) -> list[str]:
    return [f"{name}: {value}" for name, value in headers.items()]


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one response whose body has a Content-Length, until it is complete."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before a response: {data!r}"
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed mid-response"
        body += chunk
    return int(status_line.split()[1]), headers, body[:length]


def stream_until_answered(sock: socket.socket, total: int, *, chunked: bool) -> int:
    """Send up to `total` body bytes in chunks, stopping as soon as the server answers;
    return how many bytes were sent."""
    payload = b"x" * CHUNK
    frame = f"{CHUNK:x}\r\n".encode() + payload + b"\r\n" if chunked else payload
    sent = 0
    while sent < total:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            return sent
        try:
            sock.sendall(frame)
        except (BrokenPipeError, ConnectionResetError):
            return sent
        sent += CHUNK
    select.select([sock], [], [], 10)
    return sent


def assert_refused(sock: socket.socket) -> None:
    status, headers, body = read_response(sock)
    assert status == 413, body
    assert headers["connection"] == "close"
    error = json.loads(body)["error"]
    assert error["code"] == "request_too_large"
    assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_a_200_mb_body_is_refused_while_it_is_read(own_server: Server, chunked: bool) -> None:
    pid = own_server.process.pid
    before = memory_kib(pid)
    total = 200 * MIB
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(total)}
    with socket.create_connection(("127.0.0.1", own_server.port), timeout=30) as sock:
        sock.sendall(head("POST", ROUTE, {"Content-Type": "application/json", **framing}))
        sent = stream_until_answered(sock, total, chunked=chunked)
        assert sent < total  # refused long before the end of the body
        assert_refused(sock)
    after = memory_kib(pid)
    assert (after["VmRSS"] - before["VmRSS"]) * 1024 < 16 * MIB
    assert (after["VmHWM"] - max(before["VmHWM"], before["VmRSS"])) * 1024 < 16 * MIB
    status, _, _ = http(own_server.base_url, "GET", "/healthz")
    assert status == 200  # the server goes on serving
    status, listed, _ = http(own_server.base_url, "GET", ROUTE, headers=HEADERS)
    assert status == 200 and listed["data"] == []  # nothing was written


def test_a_body_just_under_the_limit_is_read(own_server: Server) -> None:
    body = b'{"name": "padded"}' + b" " * (MIB - 100)  # whitespace is valid JSON
    with socket.create_connection(("127.0.0.1", own_server.port), timeout=30) as sock:
        extra = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        sock.sendall(head("POST", ROUTE, extra) + body)
        status, _, reply = read_response(sock)
    assert status == 200, reply
    assert json.loads(reply)["name"] == "padded"


def test_an_upload_past_its_own_limit_is_refused_while_it_streams(own_server: Server) -> None:
    boundary = "corebox-boundary"
    preamble = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n'
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    extra = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Transfer-Encoding": "chunked",
    }
    with socket.create_connection(("127.0.0.1", own_server.port), timeout=30) as sock:
        sock.sendall(head("POST", "/v1/files", extra))
        sock.sendall(f"{len(preamble):x}\r\n".encode() + preamble + b"\r\n")
        sent = stream_until_answered(sock, 200 * MIB, chunked=True)
        assert 64 * MIB <= sent < 200 * MIB  # the upload limit is larger than a route's
        assert_refused(sock)


def multipart_head(boundary: str) -> bytes:
    return (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n'
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def test_a_large_upload_streams_without_growing_the_process(own_server: Server) -> None:
    pid = own_server.process.pid
    before = memory_kib(pid)
    boundary = "corebox-boundary"
    size = 40 * MIB
    head_part = multipart_head(boundary)
    tail_part = f"\r\n--{boundary}--\r\n".encode()
    extra = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(len(head_part) + size + len(tail_part)),
    }
    with socket.create_connection(("127.0.0.1", own_server.port), timeout=60) as sock:
        sock.sendall(head("POST", "/v1/files", extra) + head_part)
        block = bytes(range(256)) * (CHUNK // 256)
        for _ in range(size // CHUNK):
            sock.sendall(block)
        sock.sendall(tail_part)
        status, _, reply = read_response(sock)
    assert status == 200, reply
    uploaded = json.loads(reply)
    assert uploaded["bytes"] == size and uploaded["object"] == "file"
    after = memory_kib(pid)
    assert (after["VmHWM"] - max(before["VmHWM"], before["VmRSS"])) * 1024 < 16 * MIB
