"""What `corebox serve` tells a person at start-up, and what it tells a program.

A person at a terminal gets `banner`: a few aligned lines on standard error saying
where the API, the console, the data directory and the key are (the key itself only on
the very first start, when it was just created), which harnesses this build runs, and
what to do next. A program reading a pipe gets `machine_lines`: stable `corebox: ...`
lines on standard output that scripts already parse (`serving on port N`).

Both are pure functions of `Facts`, so their content is tested without a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from allinone.config import local_base_url


@dataclass(frozen=True)
class Facts:
    """What the banner needs to know about a server that has just started."""

    version: str
    host: str
    port: int
    data_dir: Path
    new_key: str | None  # the default project's key, only on the very first start
    key_file: Path | None  # where that key is kept, if it is kept in a file
    key_from_environment: bool
    harnesses: tuple[str, ...]
    model: str | None  # the builtin harness's model endpoint, if one is configured
    default_archived: bool = False  # its key file holds a key that opens nothing


def banner(facts: Facts) -> list[str]:
    """At most nine lines, every one of them something the user needs."""
    root = local_base_url(facts.host, facts.port)
    lines = [
        f"corebox {facts.version} is serving",
        f"  API        {root}/v1",
        f"  console    {root}/",
        f"  data       {facts.data_dir}",
    ]
    if facts.new_key is not None:
        lines.append(f"  API key    {facts.new_key}")
        lines.append(f"             shown once; saved to {facts.key_file} (mode 0600)")
    elif facts.key_from_environment:
        lines.append("  API key    from COREBOX_API_KEY")
    elif facts.default_archived:
        lines.append("  API key    none: the default project is archived (corebox keys create)")
    elif facts.key_file is not None:
        lines.append(f"  API key    in {facts.key_file}")
    lines.append(f"  harnesses  {_harnesses(facts)}")
    lines.append(f"  next       {_next(facts, root)}")
    return lines


def _next(facts: Facts, root: str) -> str:
    """A command after which the official SDK's `OpenAI()` talks to this server."""
    if facts.key_from_environment:
        key = "$COREBOX_API_KEY"
    elif facts.key_file is not None and not facts.default_archived:
        key = f"$(cat {facts.key_file})"
    else:
        return f"export OPENAI_BASE_URL={root}/v1 OPENAI_API_KEY=<a project key>"
    return f"export OPENAI_BASE_URL={root}/v1 OPENAI_API_KEY={key}"


def _harnesses(facts: Facts) -> str:
    shown = []
    for kind in facts.harnesses:
        if kind == "builtin":
            needs = "needs --model-base-url"
            shown.append(f"builtin ({facts.model or needs})")
        else:
            shown.append(kind)
    return ", ".join(shown) or "none in this process: connect a `corebox daemon`"


def machine_lines(facts: Facts) -> list[str]:
    """The lines scripts parse; unchanged in meaning across releases."""
    lines = []
    if facts.new_key is not None:
        lines.append(f"corebox: created the default project; its API key is {facts.new_key}")
        lines.append(
            f"corebox: the key was saved to {facts.key_file} (mode 0600) and will not be "
            "shown again"
        )
    lines.append(f"corebox: serving on port {facts.port}")
    return lines
