"""`runtime_prepare` (Core -> Runtime) and `runtime_prepare_result`: Environment
initialization and capability transfer, one transfer per connection.

The envelope id is the transfer id (a canonical UUID). The `begin` header is typed and
carries no file data: exactly one of `skill`, `plugin`, `file`, `initialization` or
`sources`, matching `action`. A `chunk` carries only `offset` and 1..64 KiB of `data`;
a `commit` carries nothing else. Skills, plugins and files are bodies of `size_bytes`
bytes with a SHA-256; `initialize` and `finalize` have no body. Logical paths are
clean paths under `/workspace`; the Runtime resolves them and owns destinations.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import msgspec

from runtime.proto.errors import DecodeErrorCode, RuntimePrepareErrorCode, ValidationError
from runtime.proto.identities import is_canonical_uuid
from runtime.proto.limits import (
    MAX_EXIT_CODE,
    MAX_INITIALIZATION_ENTRIES,
    MAX_RUNTIME_PREPARE_FRAME_BYTES,
    MAX_SOURCE_DIRECTORIES,
    PLUGIN_SLOTS,
)
from runtime.proto.paths import is_entry_name, is_logical_path
from runtime.proto.strictness import LENIENT, STRICT
from runtime.proto.transfers import (
    TransferKind,
    TransferOutcome,
    TransferStep,
    check_receipt,
    is_sha256_hex,
    validate_chunk_frame,
    validate_transfer_size,
)

_STRICT = STRICT
_OUT = LENIENT
INVALID = RuntimePrepareErrorCode.INVALID_REQUEST


class PrepareAction(StrEnum):
    SKILL = "skill"
    PLUGIN = "plugin"
    FILE = "file"
    INITIALIZE = "initialize"
    FINALIZE = "finalize"


class InitializationAction(StrEnum):
    CONFIGURE = "configure"  # only `env`
    NPM = "npm"  # only `packages`
    PYTHON = "python"  # only `packages`
    SETUP = "setup"  # `command`, optional `cwd`


class SkillMetadata(msgspec.Struct, **_STRICT):
    name: str
    description: str = ""


class PluginMetadata(msgspec.Struct, **_STRICT):
    name: str
    version: str = ""


class RuntimeInitialFile(msgspec.Struct, **_STRICT):
    path: str


class RuntimeInitialization(msgspec.Struct, **_STRICT):
    action: InitializationAction
    env: dict[str, str] | None = None
    packages: list[str] | None = None
    command: str = ""
    cwd: str = ""

    def validate(self) -> None:
        if self.cwd and not is_logical_path(self.cwd, allow_root=True):
            raise ValidationError(INVALID, "initialization cwd is invalid")
        if self.action == InitializationAction.CONFIGURE:
            valid = self.packages is None and not self.command and not self.cwd
            valid = valid and _valid_env(self.env or {})
        elif self.action in (InitializationAction.NPM, InitializationAction.PYTHON):
            valid = self.env is None and not self.command and not self.cwd
            valid = valid and _valid_packages(self.packages or [])
        else:
            valid = self.env is None and self.packages is None
            valid = valid and bool(self.command) and "\x00" not in self.command
        if not valid:
            raise ValidationError(INVALID, "initialization is invalid")


def _valid_env(env: dict[str, str]) -> bool:
    return len(env) <= MAX_INITIALIZATION_ENTRIES and all(
        key and not set("=\x00\r\n").intersection(key) and "\x00" not in value
        for key, value in env.items()
    )


def _valid_packages(packages: list[str]) -> bool:
    return 0 < len(packages) <= MAX_INITIALIZATION_ENTRIES and all(
        name and not name.startswith("-") and not set("\x00\r\n").intersection(name)
        for name in packages
    )


class CapabilitySources(msgspec.Struct, **_STRICT):
    """The capability input `finalize` installs: skills, plugins and source directories."""

    skills: list[SkillMetadata] = []
    plugins: list[PluginMetadata] = []
    directories: list[str] = []

    def validate(self) -> None:
        names = [item.name for item in self.skills] + [item.name for item in self.plugins]
        directories = self.directories
        if (
            not all(is_entry_name(name) for name in names)
            or len(directories) > MAX_SOURCE_DIRECTORIES
            or len(set(directories)) != len(directories)
            or not all(is_logical_path(path) for path in directories)
        ):
            raise ValidationError(INVALID, "capability sources are invalid")


class RuntimePrepare(msgspec.Struct, **_STRICT):
    step: TransferStep
    environment_id: str = ""
    session_id: str = ""
    action: Literal["", "skill", "plugin", "file", "initialize", "finalize"] = ""
    slot: int = 0
    skill: SkillMetadata | None = None
    plugin: PluginMetadata | None = None
    file: RuntimeInitialFile | None = None
    initialization: RuntimeInitialization | None = None
    sources: CapabilitySources | None = None
    size_bytes: int = 0
    sha256: str = ""
    offset: int = 0
    data: bytes = b""

    def validate(self) -> None:
        """Apply the step's rules; raises ValidationError(`invalid_request`)."""
        if self.step == TransferStep.BEGIN:
            self._validate_begin()
            return
        header = (self.environment_id, self.session_id, self.action, self.slot, self.sha256)
        metadata = (self.skill, self.plugin, self.file, self.initialization, self.sources)
        if any(header) or self.size_bytes or any(item is not None for item in metadata):
            raise ValidationError(INVALID, "only begin carries a header")
        if self.step == TransferStep.CHUNK:
            validate_chunk_frame(self.offset, len(self.data))
        elif self.offset or self.data:
            raise ValidationError(INVALID, "commit carries no data")

    def _validate_begin(self) -> None:
        if not (is_canonical_uuid(self.environment_id) and is_canonical_uuid(self.session_id)):
            raise ValidationError(INVALID, "begin needs canonical environment and session ids")
        if self.offset or self.data:
            raise ValidationError(INVALID, "begin carries no data")
        present = {
            PrepareAction.SKILL: self.skill,
            PrepareAction.PLUGIN: self.plugin,
            PrepareAction.FILE: self.file,
            PrepareAction.INITIALIZE: self.initialization,
            PrepareAction.FINALIZE: self.sources,
        }
        chosen = [action for action, value in present.items() if value is not None]
        if chosen != [self.action]:
            raise ValidationError(INVALID, "begin needs exactly the metadata of its action")
        max_slot = PLUGIN_SLOTS - 1 if self.action == "plugin" else 0
        if not 0 <= self.slot <= max_slot:
            raise ValidationError(INVALID, "slot is out of range")
        if self.action in (PrepareAction.INITIALIZE, PrepareAction.FINALIZE):
            if self.size_bytes or self.sha256:
                raise ValidationError(INVALID, "initialize and finalize carry no body")
        else:
            validate_transfer_size(self.size_bytes, allow_empty=self.action == "file")
            if not is_sha256_hex(self.sha256):
                raise ValidationError(INVALID, "sha256 must be 64 lowercase hex digits")
        self._validate_metadata()
        if len(msgspec.json.encode(self)) > MAX_RUNTIME_PREPARE_FRAME_BYTES:
            raise ValidationError(INVALID, "begin header is too large")

    def _validate_metadata(self) -> None:
        if self.skill is not None and not is_entry_name(self.skill.name):
            raise ValidationError(INVALID, "skill name is invalid")
        if self.plugin is not None and not is_entry_name(self.plugin.name):
            raise ValidationError(INVALID, "plugin name is invalid")
        if self.file is not None and not is_logical_path(self.file.path):
            raise ValidationError(INVALID, "file path is invalid")
        if self.initialization is not None:
            self.initialization.validate()
        if self.sources is not None:
            self.sources.validate()


class RuntimePrepareResult(msgspec.Struct, **_OUT):
    outcome: TransferOutcome
    exit_code: int = 0
    offset: int = 0
    size_bytes: int = 0
    error_code: str = ""

    def check(self, expected: TransferOutcome, offset: int, size_bytes: int) -> None:
        """Accept the expected receipt or a finite terminal; `exit_code` (0..255) is
        nonzero only on `failed`. Raises ValidationError(`invalid_receipt`)."""
        if not 0 <= self.exit_code <= MAX_EXIT_CODE or (
            self.exit_code and self.outcome != TransferOutcome.FAILED
        ):
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "exit code is invalid")
        check_receipt(
            TransferKind.RUNTIME_PREPARE,
            self.outcome,
            self.offset,
            self.size_bytes,
            self.error_code,
            expected=expected,
            expected_offset=offset,
            expected_size=size_bytes,
        )
