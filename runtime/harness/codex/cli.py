"""Finding the Codex CLI and checking its version.

The adapter speaks the app-server protocol of the CLI series it was written against
(KNOWN_SERIES). A CLI outside it is treated as absent: the harness is declared
unavailable, so Core neither lists it nor accepts sessions for it. The probe runs
`codex --version` once, when the Runtime registers its harnesses.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from dataclasses import dataclass

log = logging.getLogger(__name__)

# (major, minor) series whose app-server protocol this adapter maps.
KNOWN_SERIES: frozenset[tuple[int, int]] = frozenset({(0, 171)})
INSTALL_HINT = "the Codex CLI 0.171 (npm install -g @openai/codex@0.171)"
PROBE_TIMEOUT_SECONDS = 15.0
VERSION = re.compile(r"^codex-cli (\d+)\.(\d+)\.(\d+)\s*$")


@dataclass(frozen=True)
class Cli:
    """An installed CLI: its executable path and version (e.g. `0.171.0`)."""

    path: str
    version: str


def known(version: str) -> bool:
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) in KNOWN_SERIES
    except (IndexError, ValueError):
        return False


def probe(executable: str = "codex") -> Cli | None:
    """The CLI at `executable` (a path, or a name looked up on PATH) when it runs and
    reports a known version; None otherwise (the reason is logged)."""
    path = shutil.which(executable)
    if path is None:
        log.debug("codex harness: no %s executable found", executable)
        return None
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("codex harness: %s --version failed (%s)", path, type(exc).__name__)
        return None
    match = VERSION.match(done.stdout.decode(errors="replace").strip())
    if done.returncode != 0 or match is None:
        log.warning("codex harness: %s did not report a version", path)
        return None
    version = ".".join(match.groups())
    if not known(version):
        log.warning("codex harness: version %s is not one the adapter knows", version)
        return None
    return Cli(path=path, version=version)
