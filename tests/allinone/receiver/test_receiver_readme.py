"""The README's messaging walk-through, run as written: a server on a clean data
directory (the first block), then the second block's lines in order in bash, with a
`corebox` on PATH that runs this source tree. It ends with the contact closed on both
sides and no job awaiting either owner."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, start_server

HEADING = "### Walk-through: two agents talk, from a clean data directory to a closed contact"


def walkthrough() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return blocks[0].strip(), blocks[1]


def corebox_on_path(bin_dir: Path) -> None:
    bin_dir.mkdir()
    wrapper = bin_dir / "corebox"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m allinone "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)


def test_the_readme_walkthrough_ends_with_the_contact_closed(tmp_path: Path) -> None:
    serve, lines = walkthrough()
    assert serve == "corebox serve --data-dir ~/cbx-demo/data"
    home = tmp_path / "home"
    (home / "cbx-demo").mkdir(parents=True)  # the server log goes beside the data directory
    corebox_on_path(tmp_path / "bin")
    server = start_server(home / "cbx-demo" / "data", api_key=None)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
        env.update(
            HOME=str(home),
            PATH=f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}",
            COREBOX_URL=server.base_url,
        )
        script = lines + 'echo "CONTACT=$CONTACT"\n'
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env=env,
            cwd=str(home),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        contact = done.stdout.rsplit("CONTACT=", 1)[1].strip()
        show = subprocess.run(
            ["corebox", "comms", "show", contact],
            env={
                **env,
                "COREBOX_API_KEY": (home / "cbx-demo/data/default-project.key").read_text().strip(),
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        server.stop()
    conversation = json.loads(show.stdout)
    assert conversation["state"] == "closed"
    hello = "Hello bob, here is alice."
    assert [(m["text"], m["status"]) for m in conversation["messages"]] == [
        (hello, "received"),
        (f'Received: "{hello}" ({len(hello)} characters).', "received"),
    ]
    assert {c["phase"] for c in conversation["claims"]} == {"waiting_reply", "completed"}
    # The last two commands list what awaits each owner: nothing.
    printed = [json.loads(block) for block in re.findall(r"^\{\n.*?^\}$", done.stdout, re.M | re.S)]
    assert printed[-2:] == [
        {"object": "list", "data": [], "cached": True},
        {"object": "list", "data": [], "cached": True},
    ]
