"""Every command's `--help` shows an example that the parser accepts, and the shell
completion script completes commands and flags in a real bash."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from allinone.cli import _parser
from allinone.cli_help import commands_of
from tests.conftest import ROOT


def test_every_command_shows_examples_the_parser_accepts() -> None:
    parser = _parser()
    for path, command in commands_of(parser):
        text = command.format_help()
        assert "\nexamples:\n" in text, " ".join(path)
        examples = text.split("\nexamples:\n", 1)[1].splitlines()
        assert examples, " ".join(path)
        for example in examples:
            words = [w for w in shlex.split(example, comments=True) if not w.startswith("2>")]
            if not path or words[0] != "corebox" or "COMMAND" in words:
                continue
            assert tuple(words[1 : 1 + len(path)]) == path, example
            parser.parse_args(words[1:])  # exits (fails the test) on an unusable example


def test_serve_alone_parses_and_describes_serve_as_the_whole_parser_does() -> None:
    """`corebox serve ...` is parsed by a parser that registers `serve` alone (the other
    commands' modules are not imported before the server starts): the same help, the
    same values, the same refusal."""
    whole, alone = _parser(), _parser(serve_only=True)
    assert [path for path, _ in commands_of(alone)] == [(), ("serve",)]
    served = dict(commands_of(whole))[("serve",)]
    assert dict(commands_of(alone))[("serve",)].format_help() == served.format_help()
    words = ["serve", "--port", "9000", "--data-dir", "/tmp/d", "--no-local-runtime"]
    assert alone.parse_args(words) == whole.parse_args(words)
    with pytest.raises(SystemExit):
        alone.parse_args(["serve", "--port", "not-a-port"])


def _complete(line: str) -> list[str]:
    """What bash offers for the last word of `line` after loading the script."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = subprocess.run(
        [sys.executable, "-m", "allinone", "completion", "bash"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    words = line.split(" ")
    program = (
        f"{script}\nCOMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n_corebox\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [word for word in done.stdout.splitlines() if word]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_commands_subcommands_and_flags() -> None:
    assert _complete("corebox do") == ["doctor"]
    assert _complete("corebox projects gr") == ["grant-root", "grants"]
    assert _complete("corebox serve --log-f") == ["--log-format"]
    assert _complete("corebox --data-dir x status --js") == ["--json"]
    assert "create" in _complete("corebox comms roles ")


def test_zsh_loads_the_bash_script_through_bashcompinit() -> None:
    from allinone.cli_help import completion

    script = completion(_parser(), "zsh")
    assert script.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert "complete -o default -F _corebox corebox" in script


def test_a_reader_that_leaves_early_ends_a_command_quietly() -> None:
    # `corebox completion bash | head -1`, made certain: the pipe's reader is gone
    # before the command writes its first line.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "allinone", "completion", "bash"],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")
