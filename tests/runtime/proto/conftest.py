"""Tier-1 protocol tests: frames in, results out. No event loop, no sockets, no clock."""

import sys
from pathlib import Path

# The repository root holds the `runtime` package; the test tree has no __init__.py.
_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
