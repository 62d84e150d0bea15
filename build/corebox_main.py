"""The frozen executable's entry point: the `corebox` console script, nothing more."""

import sys

from allinone.cli import main

if __name__ == "__main__":
    sys.exit(main())
