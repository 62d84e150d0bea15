"""The frozen executable's entry point: the `corebox` console script, and (with the hidden
first argument `__confine`) the launcher that confines a command before it execs it."""

import os
import signal
import sys

from allinone.cli import main
from runtime.confinement import LAUNCHER_ARGUMENT, launch

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_the_launcher() -> None:
    """The one-file executable runs as two processes: the one started, which unpacks the
    program and waits, and this one, which runs it. Signals the first receives reach this
    one, but a kill -9 of it (a supervisor's, or an operator's) would leave this one
    serving, holding its port and database. On Linux the kernel then kills this one too,
    as a kill -9 of both would (nothing acknowledged is lost by that)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # the launcher died before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    die_with_the_launcher()
    if sys.argv[1:2] == [LAUNCHER_ARGUMENT]:
        sys.exit(launch(sys.argv[2:]))
    sys.exit(main())
