"""`corebox skills ...`: manage a project's skills on a running server, as a person would
with the SDK's `client.skills` (the project's API key by the rule every such command
follows, `run_control.project_key`; the server's address from `--url`, `COREBOX_URL` or
the configuration).

    corebox skills create PATH             a folder holding SKILL.md, or a .zip
    corebox skills version SKILL_ID PATH [--default]
    corebox skills list
    corebox skills default SKILL_ID VERSION
    corebox skills delete SKILL_ID

Each prints one line per skill or version (`--json` for the API's JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from allinone.admin import AdminError, refusal, unreachable
from allinone.run_control import client_for, project_options

if TYPE_CHECKING:
    import openai

# `openai` is imported inside the functions that use it (a static import PyInstaller
# sees), so other commands do not pay for loading it.

COMMAND = "skills"
MAX_FILES = 1000


class SkillCommandError(Exception):
    """A skills command cannot run or the server refused it; the message says why."""


def add_commands(commands: Any) -> None:
    common = project_options()
    skills = commands.add_parser(COMMAND, help="manage a project's skills (needs a running server)")
    actions = skills.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="upload a new skill")
    create.add_argument("path", help="a folder with a SKILL.md at its root, or a .zip")
    version = actions.add_parser("version", parents=[common], help="upload a new version")
    version.add_argument("skill_id")
    version.add_argument("path")
    version.add_argument("--default", action="store_true", help="make it the default version")
    actions.add_parser("list", parents=[common], help="list the project's skills")
    default = actions.add_parser("default", parents=[common], help="set the default version")
    default.add_argument("skill_id")
    default.add_argument("version")
    delete = actions.add_parser("delete", parents=[common], help="delete a skill")
    delete.add_argument("skill_id")


def run_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    try:
        run(args, environ, sys.stdout)
    except SkillCommandError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> None:
    import openai

    try:
        target = client_for(args, environ)  # the address and key every project command uses
    except AdminError as exc:
        raise SkillCommandError(str(exc)) from exc
    client = openai.OpenAI(base_url=f"{target.base_url}/v1", api_key=target.api_key, max_retries=0)
    try:
        result = _act(client, args)
    except openai.APIStatusError as exc:
        raise SkillCommandError(refusal(exc.status_code, exc.body, exc.message)) from exc
    except openai.APIConnectionError as exc:
        raise SkillCommandError(unreachable(target.base_url, _os_error(exc))) from exc
    except ValueError as exc:  # the SDK refuses an id no URL path can hold ("", "..")
        raise SkillCommandError(f"{getattr(args, 'skill_id', '')!r} is not an id") from exc
    items = result if isinstance(result, list) else [result]
    if args.json:
        print(json.dumps([i.model_dump() for i in items], indent=2), file=out)
        return
    for item in items:
        print(_line(item.model_dump()), file=out)


def _act(client: openai.OpenAI, args: argparse.Namespace) -> Any:
    if args.action == "create":
        return client.skills.create(files=_files(Path(args.path)))
    if args.action == "version":
        return client.skills.versions.create(
            args.skill_id, files=_files(Path(args.path)), default=args.default
        )
    if args.action == "list":
        return list(client.skills.list(order="asc", limit=100))
    if args.action == "default":
        return client.skills.update(args.skill_id, default_version=args.version)
    return client.skills.delete(args.skill_id)


def _os_error(exc: BaseException) -> OSError:
    """The system's reason under the SDK's connection error (refused, timed out...)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError):
            return cause
        cause = cause.__cause__ or cause.__context__
    return OSError(str(exc))


def _files(path: Path) -> Any:
    """A zip as one upload, or a folder's regular files named by relative path."""
    if path.is_file():
        return (path.name, path.read_bytes(), "application/zip")
    if not path.is_dir():
        raise SkillCommandError(f"{path} is neither a folder nor a file")
    found = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    if not found:
        raise SkillCommandError(f"{path} holds no files: a skill is a folder with a SKILL.md")
    if len(found) > MAX_FILES:
        raise SkillCommandError(f"{path} holds more than {MAX_FILES} files")
    return [(p.relative_to(path).as_posix(), p.read_bytes()) for p in found]


def _line(item: dict[str, Any]) -> str:
    if item.get("object") == "skill":
        return (
            f"{item['id']}  {item['name']}  default {item['default_version']}"
            f"  latest {item['latest_version']}  {item['description']}"
        )
    if item.get("object") == "skill.version":
        return f"{item['skill_id']}  version {item['version']}  {item['name']}"
    return f"{item['id']}  deleted"


__all__ = ["COMMAND", "SkillCommandError", "add_commands", "run", "run_command"]
