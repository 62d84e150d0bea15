"""Build the one-file `corebox` executable: `python build/build.py` writes `dist/corebox`.

Runs PyInstaller on `build/corebox.spec` from the repository root with the work tree in
`build/work`. Exits non-zero if PyInstaller fails or the executable is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "build" / "corebox.spec"
EXECUTABLE = ROOT / "dist" / "corebox"
# The Python modules in the executable's PYZ archive are stored, not deflated: each one the
# server imports at start is then read without inflating it (~1/3 of loading a module's
# code). The executable grows; starting it does not read the modules it does not import.
STORED = {"PYINSTALLER_ZLIB_COMPRESSION_LEVEL": "0"}


def main() -> int:
    command = [
        sys.executable,
        "-m",
        "PyInstaller",
        str(SPEC),
        "--distpath",
        "dist",
        "--workpath",
        "build/work",
        "--noconfirm",
        "--log-level",
        "WARN",
    ]
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, check=False, env={**os.environ, **STORED})
    if result.returncode != 0:
        print(f"build: PyInstaller failed with exit status {result.returncode}", file=sys.stderr)
        return result.returncode
    if not EXECUTABLE.is_file():
        print(f"build: PyInstaller succeeded but {EXECUTABLE} is missing", file=sys.stderr)
        return 1
    size_mib = EXECUTABLE.stat().st_size / (1024 * 1024)
    elapsed = time.monotonic() - started
    print(f"build: wrote {EXECUTABLE.relative_to(ROOT)} ({size_mib:.1f} MiB) in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
