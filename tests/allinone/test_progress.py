"""The progress bar on a real pseudo-terminal, and its silence on a pipe."""

from __future__ import annotations

import os
import pty
import select

from allinone.progress import Bar, line


class Ticks:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _drain(fd: int) -> str:
    out = b""
    while select.select([fd], [], [], 0)[0]:
        out += os.read(fd, 65536)
    return out.decode()


def test_a_terminal_sees_one_line_redrawn_and_ended() -> None:
    main, terminal = pty.openpty()
    clock = Ticks()
    with os.fdopen(terminal, "w") as stream:
        with Bar("export", stream, unit="bytes", interval=1.0, clock=clock) as progress:
            assert progress.enabled
            progress(0, None)  # the total is not known yet
            progress(0, 4 * 1024 * 1024)
            progress(1024 * 1024, 4 * 1024 * 1024)  # within the interval: not drawn
            clock.now = 2.0
            progress(2 * 1024 * 1024, 4 * 1024 * 1024)
            progress(4 * 1024 * 1024, 4 * 1024 * 1024)  # the end is always drawn
        shown = _drain(main).replace("\r\n", "\n")  # the terminal ends lines with CRLF
    os.close(main)
    frames = shown.split("\r")[1:]
    assert len(frames) == 3, shown
    assert frames[0].startswith("export 0 B")
    assert " 50%" in frames[1] and "100%" in frames[2]
    assert "4.0 MiB/4.0 MiB" in frames[2]
    assert shown.endswith("\n")


def test_a_pipe_gets_nothing() -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream, Bar("gc", stream) as progress:
        assert not progress.enabled
        for done in range(11):
            progress(done, 10)
    with os.fdopen(read) as pipe:
        assert pipe.read() == ""


def test_frames() -> None:
    assert line("backup", 5, 10) == "backup [###############...............]  50%  5 items/10 items"
    assert line("import", 3, 0, "files") == "import 3 files"  # the total is not known yet
    assert line("restore", 1536, 1536, "bytes").endswith("100%  1.5 KiB/1.5 KiB")
