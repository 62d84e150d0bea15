"""The real Codex CLI for tests: the one on PATH when it is a version the adapter knows,
else one installed from its public npm package into build/work/codex (once; later runs
reuse it). `codex_bin()` returns the directory holding `codex`, or the reason there is
none, so tests that need it can say why they did not run."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

from runtime.harness.codex.cli import probe

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@openai/codex@0.171.0"
PREFIX = ROOT / "build" / "work" / "codex"
INSTALL_TIMEOUT_SECONDS = 900


@cache
def codex_bin() -> tuple[Path | None, str]:
    """(directory of a known `codex`, "") or (None, why there is none)."""
    for candidate in ("codex", str(PREFIX / "node_modules" / ".bin" / "codex")):
        found = probe(candidate)
        if found is not None:
            return Path(found.path).parent, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "the Codex CLI is not installed and npm is not available to install it"
    PREFIX.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", PACKAGE],
            capture_output=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"npm install {PACKAGE} timed out"
    found = probe(str(PREFIX / "node_modules" / ".bin" / "codex"))
    if found is None:
        tail = done.stderr.decode(errors="replace")[-300:]
        return None, f"npm install {PACKAGE} did not give a usable CLI: {tail}"
    return Path(found.path).parent, ""
