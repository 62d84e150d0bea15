"""Envelope and W3C trace handling: the trace is diagnostic only and never rejected."""

import pytest

from runtime.proto.codec import decode_from_core, decode_from_runtime, encode
from runtime.proto.envelope import ensure_trace, is_valid_trace, new_trace
from runtime.proto.run import PromptCancel

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _fixed(n: int) -> str:
    return "ab" * n


@pytest.mark.parametrize(
    "trace",
    [
        "",
        "garbage",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        VALID + " ",
    ],
)
def test_a_missing_or_invalid_trace_is_replaced_by_a_local_trace(trace: str) -> None:
    assert not is_valid_trace(trace)
    local = ensure_trace(trace, _fixed)
    assert local == f"00-{'ab' * 16}-{'ab' * 8}-01"
    assert is_valid_trace(local)


def test_a_valid_trace_is_kept() -> None:
    assert ensure_trace(VALID, _fixed) == VALID


def test_new_traces_are_valid_and_distinct() -> None:
    first, second = new_trace(), new_trace()
    assert is_valid_trace(first) and is_valid_trace(second)
    assert first != second


@pytest.mark.parametrize("trace", ["", "not-a-trace", VALID])
def test_decoding_never_rejects_a_frame_for_its_trace(trace: str) -> None:
    frame = decode_from_core(encode(PromptCancel("d"), "run", trace))
    assert frame.trace == trace
    assert frame.id == "run"
    assert is_valid_trace(ensure_trace(frame.trace))


def test_a_frame_without_trace_or_payload_decodes_with_empty_defaults() -> None:
    frame = decode_from_runtime(b'{"type":"permission_cancel","id":"perm_1"}')
    assert (frame.id, frame.trace) == ("perm_1", "")


def test_an_absent_trace_is_not_emitted() -> None:
    assert b"trace" not in encode(PromptCancel(), "run")
