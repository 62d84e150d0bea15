"""The frozen executable's entry point: the `corebox` console script, and (with the hidden
first argument `__confine`) the launcher that confines a command before it execs it."""

import sys

from allinone.cli import main
from runtime.confinement import LAUNCHER_ARGUMENT, launch

if __name__ == "__main__":
    if sys.argv[1:2] == [LAUNCHER_ARGUMENT]:
        sys.exit(launch(sys.argv[2:]))
    sys.exit(main())
