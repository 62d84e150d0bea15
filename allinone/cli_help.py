"""What the CLI shows besides its flags: an example under every command's `--help`, and
shell completion scripts generated from the same parser.

`add_examples` walks the finished parser and gives every command (`serve`,
`projects create`, ...) an `examples:` epilog from `EXAMPLES`; a command without one is
a test failure, so a new command arrives with its example. `completion` writes a bash
or zsh script that completes command names and flags from the parser itself:

    eval "$(corebox completion bash)"      # in ~/.bashrc
    eval "$(corebox completion zsh)"       # in ~/.zshrc
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator

SHELLS = ("bash", "zsh")

EXAMPLES: dict[str, tuple[str, ...]] = {
    "serve": (
        "corebox serve",
        "corebox serve --port 9000 --data-dir ./state",
        "corebox serve --model-base-url http://127.0.0.1:11434/v1 --model llama3.2",
        "corebox serve --log-level debug --log-format json 2>corebox.log",
    ),
    "projects create": ("corebox projects create demo",),
    "projects list": ("corebox projects list --json",),
    "projects archive": ("corebox projects archive proj_0123",),
    "projects grant-root": ("corebox projects grant-root proj_0123 ~/code",),
    "projects revoke-root": ("corebox projects revoke-root proj_0123 ~/code",),
    "projects grants": ("corebox projects grants proj_0123",),
    "projects trust": ("corebox projects trust proj_0123", "corebox projects trust proj_0123 --no"),
    "keys create": ("corebox keys create proj_0123 --name laptop",),
    "keys list": ("corebox keys list proj_0123",),
    "keys revoke": ("corebox keys revoke proj_0123 key_0456",),
    "receiver once": ("corebox receiver once --config ~/.corebox-receiver/config.json",),
    "receiver status": ("corebox receiver status --config ~/.corebox-receiver/config.json",),
    "receiver run": ("corebox receiver run --config ~/.corebox-receiver/config.json",),
    "receiver resolve": (
        "corebox receiver resolve --config ~/.corebox-receiver/config.json"
        " --resolution resolution.json",
    ),
    "receiver jobs": ("corebox receiver jobs --config ~/.corebox-receiver/config.json",),
    "receiver check": ("corebox receiver check --config ~/.corebox-receiver/config.json",),
    "handler agent": ("corebox handler agent --agent-id agent_0123 --api-key-file key.txt",),
    "comms roles create": ("corebox comms roles create --name reviewer",),
    "comms roles list": ("corebox comms roles list",),
    "comms roles show": ("corebox comms roles show --role role_0123",),
    "comms instances create": (
        "corebox comms instances create --role role_0123 --name laptop --token-file token.txt",
    ),
    "comms instances list": ("corebox comms instances list --role role_0123",),
    "comms primary set": (
        "corebox comms primary set --role role_0123 --instance inst_0456 --expected-epoch 1",
    ),
    "comms stream rotate": (
        "corebox comms stream rotate --role role_0123 --expected-stream-id str_0789",
    ),
    "comms open": (
        'corebox comms open --from-instance inst_0456 --to-role role_0123 "Please review"',
    ),
    "comms contacts": ("corebox comms contacts",),
    "comms show": ("corebox comms show cont_0123",),
    "comms close": ("corebox comms close cont_0123 --from-instance inst_0456",),
    "devices create": ("corebox devices create build-box --credential-file device.cred",),
    "devices list": ("corebox devices list",),
    "devices revoke": ("corebox devices revoke dev_0123",),
    "daemon": ("corebox daemon --core http://core-host:8800 --credential-file device.cred",),
    "skills create": ("corebox skills create ./my-skill",),
    "skills version": ("corebox skills version skill_0123 ./my-skill",),
    "skills list": ("corebox skills list --json",),
    "skills default": ("corebox skills default skill_0123 2",),
    "skills delete": ("corebox skills delete skill_0123",),
    "sessions list": ("corebox sessions list", "corebox sessions list --limit 100 --json"),
    "sessions pause": (
        "corebox sessions pause sess_0123",
        "corebox sessions pause sess_0123 --expected-version 4",
    ),
    "sessions resume": ("corebox sessions resume sess_0123",),
    "sessions cancel": ("corebox sessions cancel sess_0123 --reason 'wrong input'",),
    "sessions commands": ("corebox sessions commands sess_0123 --json",),
    "sessions fork": (
        "corebox sessions fork sess_0123",
        "corebox sessions fork sess_0123 --turn-id turn_0456",
    ),
    "sessions rewind": ("corebox sessions rewind sess_0123 --turns 2",),
    "agents versions": ("corebox agents versions agent_0123",),
    "agents deployments": ("corebox agents deployments agent_0123",),
    "agents promote": ("corebox agents promote agent_0123 production 3 --expected 2",),
    "agents rollback": ("corebox agents rollback agent_0123 production",),
    "overlays show": ("corebox overlays show",),
    "overlays set": (
        "corebox overlays set kill_switch cancel --project proj_0123 --reason 'incident 12'",
        "corebox overlays set tool_disabled run_command --project proj_0123 --reason review",
    ),
    "overlays clear": (
        "corebox overlays clear ovl_0123",
        "corebox overlays clear ovl_0123 --resume",
    ),
    "console": ("corebox console", "corebox console --open"),
    "gc": ("corebox gc --dry-run", "corebox gc --retention-days 0"),
    "storage": ("corebox storage", "corebox storage --json"),
    "backup": ("corebox backup corebox.backup",),
    "restore": ("corebox restore corebox.backup --data-dir ~/corebox-restored",),
    "export": (
        "corebox export -o demo.bundle",
        "corebox export -o demo.bundle --sessions sess_0123",
    ),
    "import": ("corebox import demo.bundle",),
    "doctor": (
        "corebox doctor",
        "corebox doctor --model-base-url http://127.0.0.1:11434/v1 --model llama3.2",
        "corebox doctor --url http://127.0.0.1:8800 --json",
    ),
    "environments show": ("corebox environments show env_0123",),
    "environments wait": (
        "corebox environments wait env_0123",
        "corebox environments wait env_0123 --timeout 600 --url http://127.0.0.1:8800",
    ),
    "status": ("corebox status", "corebox status --url http://127.0.0.1:8800 --json"),
    "migrate-to-postgres": (
        "corebox migrate-to-postgres --from ~/.local/share/corebox"
        " --to postgresql://corebox@127.0.0.1:5432/corebox",
    ),
    "completion": (
        'eval "$(corebox completion bash)"   # add to ~/.bashrc',
        'eval "$(corebox completion zsh)"    # add to ~/.zshrc',
    ),
}


ROOT = (
    "corebox serve                      # start; the key is printed at the first start",
    "corebox doctor                     # is this set-up healthy?",
    "corebox status                     # what a running server is doing",
    "corebox COMMAND --help             # every command shows its examples",
)


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("completion", help="print a shell completion script")
    parser.add_argument("shell", choices=SHELLS)


def commands_of(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser in the tree with its command path (the root's path is empty)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands_of(child, (*path, name))


def _is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


# Short placeholders for the values of the flags many commands share (instead of
# argparse's upper-cased destination: `--api-key-file API_KEY_FILE`).
METAVARS = {
    "data_dir": "DIR",
    "config": "FILE",
    "url": "URL",
    "api_key": "KEY",
    "api_key_file": "FILE",
    "credential_file": "FILE",
    "output": "FILE",
}


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Give every command its examples (kept with whatever epilog it already has) and
    its shared flags their short placeholders."""
    for _, command in commands_of(parser):
        for action in command._actions:
            named = METAVARS.get(action.dest)
            if named and action.option_strings and action.metavar is None and action.nargs != 0:
                action.metavar = named
    for path, command in commands_of(parser):
        examples = EXAMPLES.get(" ".join(path)) or _gathered(command, path)
        if not examples:
            continue
        block = "examples:\n" + "\n".join(f"  {line}" for line in examples)
        command.epilog = f"{command.epilog}\n\n{block}" if command.epilog else block
        command.formatter_class = argparse.RawDescriptionHelpFormatter


def _gathered(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> tuple[str, ...]:
    """A group's examples: the first one of each command below it (the root's: `ROOT`)."""
    if not path:
        return ROOT
    found = []
    for below, _ in commands_of(parser, path):
        examples = EXAMPLES.get(" ".join(below))
        if below != path and examples:
            found.append(examples[0])
    return tuple(found)


def _words(parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """(subcommands, flags) offered right after `parser`'s own words."""
    subs: list[str] = []
    flags: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs.extend(action.choices)
        else:
            flags.extend(action.option_strings)
    return subs, flags


def completion(parser: argparse.ArgumentParser, shell: str) -> str:
    """A script defining `_corebox` and registering it for `corebox`; zsh runs the bash
    one through its bashcompinit layer."""
    cases = []
    for path, command in commands_of(parser):
        subs, flags = _words(command)
        key = shlex.quote(" ".join(path))
        cases.append(f"    {key}) subs={shlex.quote(' '.join(subs))}; "
                     f"flags={shlex.quote(' '.join(flags))} ;;")  # fmt: skip
    script = _BASH.replace("@CASES@", "\n".join(cases))
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + script
    return script


_BASH = """_corebox_node() {
  subs=""; flags=""
  case "$1" in
@CASES@
  esac
}
_corebox() {
  local cur word path="" i subs flags
  cur="${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    _corebox_node "$path"
    case " $subs " in
      *" $word "*) path="${path:+$path }$word" ;;
    esac
  done
  _corebox_node "$path"
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  else
    COMPREPLY=( $(compgen -W "$subs" -- "$cur") )
  fi
}
complete -o default -F _corebox corebox
"""
