"""The frozen executable's entry point: the `corebox` console script, and (with the hidden
first argument `__confine`) the launcher that confines a command before it execs it."""

import os
import sys

from allinone.cli import main
from runtime.confinement import LAUNCHER_ARGUMENT, launch
from runtime.harness.processes import death_request


def die_with_the_launcher() -> None:
    """The one-file executable runs as two processes: the one started, which unpacks the
    program and waits, and this one, which runs it. Signals the first receives reach this
    one, but a kill -9 of it (a supervisor's, or an operator's) would leave this one
    serving, holding its port and database. On Linux the kernel then kills this one too,
    as a kill -9 of both would (nothing acknowledged is lost by that)."""
    request = death_request(os.getppid())
    if request is not None:
        request()


if __name__ == "__main__":
    die_with_the_launcher()
    if sys.argv[1:2] == [LAUNCHER_ARGUMENT]:
        sys.exit(launch(sys.argv[2:]))
    sys.exit(main())
