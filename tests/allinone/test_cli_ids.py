"""An id typed on the command line goes into a request's URL as one path segment: a bad
id (a space, a slash, `..`, punctuation) gets the server's own refusal in one line, never
a traceback and never another route."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from allinone import cli
from allinone.admin import url_path
from tests.conftest import API_KEY, Server

BAD = "sess a"
Corebox = Callable[..., tuple[int, str]]

COMMANDS = [
    ("sessions", "pause", BAD),
    ("sessions", "commands", BAD),
    ("sessions", "fork", BAD),
    ("keys", "list", BAD),
    ("keys", "revoke", "proj_none", "key a"),
    ("projects", "archive", BAD),
    ("devices", "revoke", BAD),
    ("environments", "show", BAD),
    ("overlays", "clear", BAD),
    ("agents", "versions", BAD),
    ("agents", "promote", "agent_none", "bad name!", "1"),
    ("skills", "delete", BAD),
]


@pytest.fixture
def corebox(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Corebox:
    for name in ("COREBOX_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COREBOX_API_KEY", API_KEY)

    def run(*argv: str) -> tuple[int, str]:
        where = ("--url", server.base_url, "--data-dir", str(server.data_dir))
        status = cli.main([*argv, *where])
        captured = capsys.readouterr()
        assert captured.out == ""
        return status, captured.err

    return run


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_bad_id_gets_the_servers_refusal_in_one_line(
    corebox: Corebox, argv: tuple[str, ...]
) -> None:
    status, err = corebox(*argv)
    assert status in (1, 2)
    assert err.startswith("corebox: error: the server refused: ") and err.count("\n") == 1, err
    assert err.endswith(("(HTTP 404)\n", "(HTTP 400)\n")), err
    assert "Unknown route" not in err


def test_an_id_is_one_path_segment() -> None:
    assert url_path("/projects/{}/api_keys", "../agents") == "/projects/..%2Fagents/api_keys"
    assert url_path("/x/{}/{}", "a b?c#d", "e\nf") == "/x/a%20b%3Fc%23d/e%0Af"


@pytest.mark.parametrize("command", [("keys", "list"), ("skills", "delete")])
@pytest.mark.parametrize("bad", ["..", "."])
def test_a_dot_segment_is_no_id(corebox: Corebox, command: tuple[str, str], bad: str) -> None:
    status, err = corebox(*command, bad)
    assert (status, err) == (1, f"corebox: error: {bad!r} is not an id\n")
