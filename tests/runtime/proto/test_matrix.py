"""The capability matrix: every profile decides every feature, with a note."""

from __future__ import annotations

import pytest

from runtime.proto import matrix


@pytest.mark.parametrize(("kind", "protocol"), list(matrix.MATRIX))
def test_every_profile_labels_every_feature(kind: str, protocol: str) -> None:
    row = matrix.profile(kind, protocol)
    assert set(row) == set(matrix.FEATURES)
    for name, value in row.items():
        assert isinstance(value.support, matrix.Support), name
        assert value.note.strip(), name


def test_an_incomplete_row_is_refused_and_an_unknown_profile_is_named() -> None:
    matrix.MATRIX[("probe", "x")] = {
        "streaming": matrix.FeatureSupport(matrix.Support.SUPPORTED, "n")
    }
    try:
        with pytest.raises(ValueError, match="incomplete"):
            matrix.profile("probe", "x")
    finally:
        del matrix.MATRIX[("probe", "x")]
    with pytest.raises(matrix.UnknownProfile):
        matrix.profile("nothing", "none")


def test_refused_and_flagged_split_what_a_request_needs() -> None:
    row = matrix.profile("builtin", "chat_completions")
    needed = ["function_tools", "text_verbosity", "web_search", "steering"]
    assert matrix.refused(row, needed) == ["web_search"]
    assert matrix.flagged(row, needed) == ["text_verbosity", "steering"]
    assert matrix.protocols("builtin") == ["chat_completions", "responses"]
    assert matrix.protocols("scripted") == ["scripted"]


def test_responses_keeps_what_chat_completions_loses() -> None:
    chat = matrix.profile("builtin", "chat_completions")
    responses = matrix.profile("builtin", "responses")
    assert chat["text_verbosity"].support is matrix.Support.LOSSY
    assert responses["text_verbosity"].support is matrix.Support.SUPPORTED
