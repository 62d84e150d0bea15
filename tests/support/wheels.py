"""Tiny pure-Python wheels built in memory, for installs that need no package index."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from typing import Any


def wheel(name: str, version: str = "1.0") -> tuple[str, bytes]:
    """(file name, bytes) of a wheel whose module `name` sets `VALUE = 1`."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": b"VALUE = 1\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: corebox-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},sha256={_digest(body)},{len(body)}\n" for path, body in files.items())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, body in files.items():
            archive.writestr(path, body)
        archive.writestr(f"{dist}/RECORD", record + f"{dist}/RECORD,,\n")
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


def _digest(body: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()


# A setup command that holds set-up until the test creates `release` in the workspace.
HOLD = "while [ ! -e release ]; do sleep 0.05; done"


def hosted(packages: list[str], setup: list[str]) -> dict[str, Any]:
    """An environment whose python packages are wheels written as its initial files (the
    install needs no package index) and whose setup commands are `setup`."""
    files = []
    names = []
    for package in packages:
        name, body = wheel(package)
        files.append(
            {
                "type": "inline",
                "data": base64.b64encode(body).decode(),
                "path": f"/workspace/wheels/{name}",
            }
        )
        names.append(f"wheels/{name}")
    return {
        "type": "openai_hosted",
        "files": files,
        "env": {"PIP_NO_INDEX": "1"},
        "packages": {"python": names},
        "setup_commands": [{"command": command} for command in setup],
    }
