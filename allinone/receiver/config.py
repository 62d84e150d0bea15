"""The receiver's configuration file and the privacy checks it must pass before anything
starts.

The configuration lives in a private directory (mode 0700, owned by the user running
the receiver); the configuration file and the token file are mode 0600 and owned by the
same user; the local store (`receiver.db`) is created in the same directory with mode
0600. Anything else is refused. Handler and notifier adapters are fixed commands:
an absolute `command`, fixed `args`, an absolute, existing and private (0700) `cwd` and
`timeout_ms` of at most 180 000; nothing in them can come from a message or from model output. All
authorisations default to false.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec

from allinone.receiver.client import check_origin, is_loopback
from allinone.receiver.errors import ConfigError

MAX_ADAPTER_MS = 180_000
DEFAULT_POLL_MS = 30_000
MIN_LOOPBACK_POLL_MS = 50
STORE_FILE = "receiver.db"
LOCK_FILE = "receiver.lock"


class CommandConfig(msgspec.Struct, forbid_unknown_fields=True):
    command: str
    cwd: str
    args: list[str] = []
    timeout_ms: Annotated[int, msgspec.Meta(ge=1, le=MAX_ADAPTER_MS)] = 120_000


class ReceiverConfig(msgspec.Struct, forbid_unknown_fields=True):
    origin: str
    token_file: str
    enabled: bool = True
    receive_authorized: bool = False
    dispatch_authorized: bool = False
    reply_authorized: bool = False
    notify_authorized: bool = False
    owner_instruction: str = ""
    handler: CommandConfig | None = None
    notifier: CommandConfig | None = None
    poll_interval_ms: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_POLL_MS


@dataclass(frozen=True)
class Loaded:
    path: Path
    directory: Path
    config: ReceiverConfig
    token: str

    @property
    def store_path(self) -> Path:
        return self.directory / STORE_FILE

    @property
    def lock_path(self) -> Path:
        return self.directory / LOCK_FILE


def check_private(path: Path, *, directory: bool) -> None:
    """Refuse `path` unless it is ours and closed to group and others."""
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror})") from exc
    kind_ok = stat.S_ISDIR(info.st_mode) if directory else stat.S_ISREG(info.st_mode)
    if not kind_ok:
        raise ConfigError(f"{path} is not a {'directory' if directory else 'regular file'}")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{path} is not owned by the user running the receiver")
    if stat.S_IMODE(info.st_mode) & 0o077:
        wanted = "0700" if directory else "0600"
        raise ConfigError(f"{path} has mode {stat.S_IMODE(info.st_mode):04o}; it must be {wanted}")


def _check_command(name: str, command: CommandConfig) -> None:
    if not os.path.isabs(command.command):
        raise ConfigError(f"{name}.command must be an absolute path")
    if not os.path.isabs(command.cwd) or not os.path.isdir(command.cwd):
        raise ConfigError(f"{name}.cwd must be an absolute path to an existing directory")
    check_private(Path(command.cwd), directory=True)


def load(path: Path) -> Loaded:
    """Read and check the configuration; raise ConfigError with one clear reason."""
    path = path.absolute()
    if not path.exists():  # before its directory's mode, which would be beside the point
        raise ConfigError(f"there is no configuration file {path}")
    check_private(path.parent, directory=True)
    check_private(path, directory=False)
    try:
        config = msgspec.json.decode(path.read_bytes(), type=ReceiverConfig)
    except (OSError, msgspec.DecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        origin = check_origin(config.origin)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    config = msgspec.structs.replace(config, origin=origin)
    token_path = Path(config.token_file)
    if not token_path.is_absolute():
        raise ConfigError("token_file must be an absolute path")
    check_private(token_path.parent, directory=True)
    check_private(token_path, directory=False)
    token = token_path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError("token_file is empty")
    for name in ("handler", "notifier"):
        command = getattr(config, name)
        if command is not None:
            _check_command(name, command)
    minimum = MIN_LOOPBACK_POLL_MS if is_loopback(origin) else DEFAULT_POLL_MS
    if config.poll_interval_ms < minimum:
        raise ConfigError(
            f"poll_interval_ms must be at least {minimum} for this origin"
            " (the protocol asks for 30 s; shorter only against a loopback platform)"
        )
    return Loaded(path, path.parent, config, token)
