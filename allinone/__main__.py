import sys

from allinone.cli import main

sys.exit(main())
