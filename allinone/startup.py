"""What `corebox serve` checks and holds before anything else starts: a writable data
directory and its listening socket. A failure is a `StartupError`, whose message is the
one line the user sees."""

from __future__ import annotations

import errno
import socket
from pathlib import Path


class StartupError(Exception):
    """Start-up cannot continue; the message is the one line the user sees."""


def prepare_data_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)  # a new data dir is private
        probe = path / ".write-probe"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise StartupError(f"data directory {path} is not writable ({exc.strerror})") from exc


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on accepted sockets whose protocol
    # says TCP, and without it keep-alive clients wait ~40 ms per response (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {host} is already in use (another corebox? `corebox status`"
                " tells); choose another with --port"
            ) from exc
        raise StartupError(f"cannot listen on {host}:{port} ({exc.strerror})") from exc
    sock.listen(512)
    sock.set_inheritable(True)
    return sock
