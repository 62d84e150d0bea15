"""Which project key a command that acts for a project uses, and how it words a refusal:
one rule for `corebox sessions`, `agents`, `environments` and `skills`."""

from __future__ import annotations

from pathlib import Path

import pytest

from allinone.admin import AdminError, refusal
from allinone.credentials import KEY_FILE
from allinone.run_control import project_key

URL = "http://127.0.0.1:8800"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory whose first start saved the default project's key."""
    (tmp_path / KEY_FILE).write_text("cbx-saved\n")
    return tmp_path


def test_the_key_file_named_on_the_command_line_comes_first(data_dir: Path) -> None:
    given = data_dir / "other.key"
    given.write_text("cbx-given\n")
    environ = {"COREBOX_API_KEY": "cbx-env", "OPENAI_API_KEY": "cbx-sdk"}
    assert project_key(str(given), environ, URL, data_dir) == "cbx-given"


def test_then_corebox_api_key(data_dir: Path) -> None:
    environ = {
        "COREBOX_API_KEY": " cbx-env ",
        "OPENAI_BASE_URL": f"{URL}/v1",
        "OPENAI_API_KEY": "cbx-sdk",
    }
    assert project_key(None, environ, URL, data_dir) == "cbx-env"


@pytest.mark.parametrize("exported", [f"{URL}/v1", f"{URL}/v1/"])
def test_then_the_banners_export_line_for_this_server(data_dir: Path, exported: str) -> None:
    environ = {"OPENAI_BASE_URL": exported, "OPENAI_API_KEY": "cbx-sdk"}
    assert project_key(None, environ, URL, data_dir) == "cbx-sdk"


@pytest.mark.parametrize(
    "environ",
    [
        {"OPENAI_API_KEY": "sk-elsewhere"},  # the SDK's own default server
        {"OPENAI_BASE_URL": "http://127.0.0.1:9999/v1", "OPENAI_API_KEY": "cbx-other"},
        {"OPENAI_BASE_URL": f"{URL}/v1", "OPENAI_API_KEY": "  "},
        {"COREBOX_API_KEY": ""},
    ],
)
def test_then_the_default_projects_key_file(data_dir: Path, environ: dict[str, str]) -> None:
    assert project_key(None, environ, URL, data_dir) == "cbx-saved"


def test_no_key_anywhere_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(AdminError) as caught:
        project_key(None, {}, URL, tmp_path)
    assert str(caught.value) == (
        "no project API key: use --api-key-file or set COREBOX_API_KEY"
        f" (there is no {tmp_path / KEY_FILE})"
    )


def test_a_key_file_that_cannot_be_read_or_is_empty_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.key"
    with pytest.raises(AdminError) as caught:
        project_key(str(missing), {"COREBOX_API_KEY": "cbx-env"}, URL, tmp_path)
    assert str(caught.value) == (
        f"cannot read the API key file {missing}: No such file or directory"
    )
    (tmp_path / KEY_FILE).write_text("\n")
    with pytest.raises(AdminError) as caught:
        project_key(None, {}, URL, tmp_path)
    assert str(caught.value) == (
        "no project API key: use --api-key-file or set COREBOX_API_KEY:"
        f" {tmp_path / KEY_FILE} is empty"
    )


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            {"message": "Invalid request: Expected `int` >= 1.", "param": "turns"},
            "Invalid request: Expected `int` >= 1. Field: turns.",
        ),
        (  # the message names its field already
            {"message": "Invalid request: turns must be at least 1.", "param": "turns"},
            "Invalid request: turns must be at least 1.",
        ),
        ({"message": "Resource not found.", "param": None}, "Resource not found."),
        ({"param": "turns"}, "Not Found"),  # no message: the HTTP reason
        (None, "Not Found"),  # not the API's error object at all
    ],
)
def test_a_refusal_says_the_servers_message_its_field_and_status(error: object, said: str) -> None:
    assert refusal(404, error, "Not Found") == f"the server refused: {said} (HTTP 404)"
