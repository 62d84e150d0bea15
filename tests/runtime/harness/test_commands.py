"""The command runner's output rule: the first MAX_OUTPUT_CHARS characters of what a
command prints, then `[truncated]` when it printed more, with the Run's secrets blanked
out before the cut (the flood itself is in tests/api/test_command_output.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from runtime.confinement import Sandbox, probe
from runtime.harness.commands import MAX_OUTPUT_CHARS, CommandRunner

SECRET = "s3cr3t-token-value"


def run(tmp_path: Path, command: str, environment: dict[str, str] | None = None) -> str:
    runner = CommandRunner(tmp_path, Sandbox(probe()), environment)
    code, output = asyncio.run(runner.run(command))
    assert code == 0, output
    return output


def test_output_up_to_the_cap_is_kept_whole(tmp_path: Path) -> None:
    assert run(tmp_path, f"head -c {MAX_OUTPUT_CHARS} /dev/zero | tr '\\0' y") == (
        "y" * MAX_OUTPUT_CHARS
    )


def test_output_past_the_cap_keeps_its_first_characters_and_the_marker(tmp_path: Path) -> None:
    output = run(tmp_path, f"head -c {MAX_OUTPUT_CHARS + 1} /dev/zero | tr '\\0' y")
    assert output == "y" * MAX_OUTPUT_CHARS + "\n[truncated]"


def test_the_cap_counts_characters_not_bytes(tmp_path: Path) -> None:
    # Three bytes each: the whole output is three times the cap in bytes, yet shown whole.
    euros = "head -c {} /dev/zero | tr '\\0' y | sed s/y/€/g"
    assert run(tmp_path, euros.format(MAX_OUTPUT_CHARS)) == "€" * MAX_OUTPUT_CHARS
    shown = run(tmp_path, euros.format(MAX_OUTPUT_CHARS + 1))
    assert shown == "€" * MAX_OUTPUT_CHARS + "\n[truncated]"


def test_a_secret_at_the_cut_is_not_shown_in_part(tmp_path: Path) -> None:
    before = MAX_OUTPUT_CHARS - 5
    command = f'head -c {before} /dev/zero | tr "\\0" x; printf %s "$TOKEN"'
    output = run(tmp_path, command, {"TOKEN": SECRET})
    assert SECRET[:5] not in output
    assert output == "x" * before + "[reda" + "\n[truncated]"
