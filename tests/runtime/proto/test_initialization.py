"""`runtime_prepare`: typed begin headers per action, bare chunks and commits."""

import msgspec
import pytest

from runtime.proto.errors import DecodeErrorCode, ValidationError
from runtime.proto.initialization import (
    CapabilitySources,
    InitializationAction,
    PluginMetadata,
    RuntimeInitialFile,
    RuntimeInitialization,
    RuntimePrepare,
    RuntimePrepareResult,
    SkillMetadata,
)
from runtime.proto.limits import MAX_CHUNK_BYTES, MAX_TRANSFER_BYTES
from runtime.proto.transfers import TransferOutcome, TransferStep

ENV = "0b7c3f52-5a57-4c35-9a53-3a3b8f6e2c11"
SESSION = "7d1e2a40-8c1b-4f0e-b7c2-52e3a4f1d9aa"
DIGEST = "a" * 64
BEGIN = RuntimePrepare(TransferStep.BEGIN, ENV, SESSION)
CONFIGURE = RuntimeInitialization(InitializationAction.CONFIGURE, env={"A": "1"})


def _begin(**changes: object) -> RuntimePrepare:
    return msgspec.structs.replace(BEGIN, **changes)


def _init(**changes: object) -> RuntimePrepare:
    initialization = msgspec.structs.replace(CONFIGURE, **changes)
    return _begin(action="initialize", initialization=initialization)


VALID = [
    _begin(action="skill", skill=SkillMetadata("review"), size_bytes=1, sha256=DIGEST),
    _begin(action="plugin", plugin=PluginMetadata("lint"), slot=49, size_bytes=9, sha256=DIGEST),
    _begin(action="file", file=RuntimeInitialFile("/workspace/a.csv"), sha256=DIGEST),
    _begin(
        action="file",
        file=RuntimeInitialFile("/workspace/a"),
        size_bytes=MAX_TRANSFER_BYTES,
        sha256=DIGEST,
    ),
    _init(),
    _init(action=InitializationAction.NPM, env=None, packages=["left-pad"]),
    _init(action=InitializationAction.PYTHON, env=None, packages=["x"] * 1000),
    _init(action=InitializationAction.SETUP, env=None, command="make", cwd="/workspace"),
    _init(env={f"K{index}": "v" for index in range(1000)}),
    _begin(action="finalize", sources=CapabilitySources(directories=["/workspace/skills"])),
    RuntimePrepare(TransferStep.CHUNK, offset=0, data=b"x" * MAX_CHUNK_BYTES),
    RuntimePrepare(TransferStep.COMMIT),
]

INVALID = [
    _begin(action="skill", skill=SkillMetadata("review"), size_bytes=0, sha256=DIGEST),
    _begin(action="skill", skill=SkillMetadata("a/b"), size_bytes=1, sha256=DIGEST),
    _begin(action="skill", skill=SkillMetadata("x"), size_bytes=1, sha256=DIGEST, slot=1),
    _begin(action="skill", plugin=PluginMetadata("x"), size_bytes=1, sha256=DIGEST),
    _begin(action="plugin", plugin=PluginMetadata("x"), slot=50, size_bytes=1, sha256=DIGEST),
    _begin(action="file", file=RuntimeInitialFile("/workspace"), sha256=DIGEST),
    _begin(action="file", file=RuntimeInitialFile("/etc/passwd"), sha256=DIGEST),
    _begin(action="file", file=RuntimeInitialFile("/workspace/a"), sha256=""),
    _begin(
        action="file",
        file=RuntimeInitialFile("/workspace/a"),
        sha256=DIGEST,
        size_bytes=MAX_TRANSFER_BYTES + 1,
    ),
    _begin(action="file", file=RuntimeInitialFile("/workspace/a"), sha256=DIGEST, data=b"x"),
    _begin(
        action="file",
        file=RuntimeInitialFile("/workspace/a"),
        sha256=DIGEST,
        skill=SkillMetadata("x"),
    ),
    _begin(
        action="file", environment_id="env", file=RuntimeInitialFile("/workspace/a"), sha256=DIGEST
    ),
    _begin(action="initialize"),
    _begin(action="initialize", initialization=CONFIGURE, size_bytes=1),
    _begin(action="initialize", initialization=CONFIGURE, sha256=DIGEST),
    _init(env={"A=B": "1"}),
    _init(env={"": "1"}),
    _init(env={"A": "\x00"}),
    _init(env={f"K{index}": "v" for index in range(1001)}),
    _init(packages=["x"]),
    _init(action=InitializationAction.NPM, env=None, packages=[]),
    _init(action=InitializationAction.NPM, env=None, packages=["--registry=evil"]),
    _init(action=InitializationAction.PYTHON, env=None, packages=["x"] * 1001),
    _init(action=InitializationAction.PYTHON, env=None, packages=["a\nb"]),
    _init(action=InitializationAction.SETUP, env=None, command=""),
    _init(action=InitializationAction.SETUP, env=None, command="make", cwd="/tmp"),
    _begin(action="finalize", sources=CapabilitySources(directories=["/workspace/a"] * 2)),
    _begin(
        action="finalize",
        sources=CapabilitySources(directories=[f"/workspace/{n}" for n in range(51)]),
    ),
    _begin(action="", file=RuntimeInitialFile("/workspace/a"), sha256=DIGEST),
    RuntimePrepare(TransferStep.CHUNK, offset=0, data=b""),
    RuntimePrepare(TransferStep.CHUNK, offset=0, data=b"x" * (MAX_CHUNK_BYTES + 1)),
    RuntimePrepare(TransferStep.CHUNK, action="file", data=b"x"),
    RuntimePrepare(TransferStep.COMMIT, offset=1),
    RuntimePrepare(TransferStep.COMMIT, slot=1),
]


@pytest.mark.parametrize("request_", VALID)
def test_valid_runtime_preparation_steps(request_: RuntimePrepare) -> None:
    request_.validate()


@pytest.mark.parametrize("request_", INVALID)
def test_invalid_runtime_preparation_steps(request_: RuntimePrepare) -> None:
    with pytest.raises(ValidationError) as caught:
        request_.validate()
    assert caught.value.code == "invalid_request"


def test_a_begin_header_is_limited_to_1_mib() -> None:
    sources = CapabilitySources(skills=[SkillMetadata("s", "d" * 1024 * 1024)])
    with pytest.raises(ValidationError):
        _begin(action="finalize", sources=sources).validate()


@pytest.mark.parametrize("exit_code", [0, 1, 255])
def test_a_failed_preparation_carries_an_exit_code_up_to_255(exit_code: int) -> None:
    RuntimePrepareResult(
        TransferOutcome.FAILED, exit_code=exit_code, error_code="runtime_preparation_failed"
    ).check(TransferOutcome.COMPLETED, 0, 0)


@pytest.mark.parametrize(
    "result",
    [
        RuntimePrepareResult(
            TransferOutcome.FAILED, exit_code=256, error_code="runtime_preparation_failed"
        ),
        RuntimePrepareResult(
            TransferOutcome.FAILED, exit_code=-1, error_code="runtime_preparation_failed"
        ),
        RuntimePrepareResult(TransferOutcome.COMPLETED, exit_code=1),
        RuntimePrepareResult(TransferOutcome.REJECTED, exit_code=1, error_code="invalid_request"),
    ],
)
def test_an_exit_code_outside_a_failure_proves_nothing(result: RuntimePrepareResult) -> None:
    with pytest.raises(ValidationError) as caught:
        result.check(TransferOutcome.COMPLETED, 0, 0)
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT
