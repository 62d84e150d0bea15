"""The banner's content for each way a server can start."""

from __future__ import annotations

from pathlib import Path

from allinone.banner import Facts, banner, machine_lines

FACTS = Facts(
    version="1.2.3",
    host="0.0.0.0",
    port=8800,
    data_dir=Path("/srv/corebox"),
    new_key=None,
    key_file=Path("/srv/corebox/default-project.key"),
    key_from_environment=False,
    harnesses=("scripted", "builtin"),
    model=None,
)


def test_a_later_start_names_the_key_file_and_loopback_urls() -> None:
    lines = banner(FACTS)
    assert len(lines) <= 9
    assert "  API        http://127.0.0.1:8800/v1" in lines
    assert "  console    http://127.0.0.1:8800/" in lines
    assert "  API key    in /srv/corebox/default-project.key" in lines
    assert "  harnesses  scripted, builtin (needs --model-base-url)" in lines
    assert lines[-1].endswith("OPENAI_API_KEY=$(cat /srv/corebox/default-project.key)")


def test_a_key_from_the_environment_is_never_printed() -> None:
    facts = Facts(**{**FACTS.__dict__, "key_from_environment": True, "key_file": None})
    shown = "\n".join(banner(facts))
    assert "from COREBOX_API_KEY" in shown and "$COREBOX_API_KEY" in shown


def test_core_without_a_local_runtime_and_a_model_say_so() -> None:
    facts = Facts(**{**FACTS.__dict__, "harnesses": (), "host": "::1", "model": "llama3.2"})
    lines = banner(facts)
    assert "  API        http://[::1]:8800/v1" in lines
    assert any("connect a `corebox daemon`" in line for line in lines)
    with_model = Facts(**{**FACTS.__dict__, "model": "llama3.2"})
    assert "  harnesses  scripted, builtin (llama3.2)" in banner(with_model)


def test_the_first_start_shows_the_key_once_in_both_forms() -> None:
    facts = Facts(**{**FACTS.__dict__, "new_key": "cbx-0123456789abcdef"})
    assert "  API key    cbx-0123456789abcdef" in banner(facts)
    assert machine_lines(facts) == [
        "corebox: created the default project; its API key is cbx-0123456789abcdef",
        "corebox: the key was saved to /srv/corebox/default-project.key (mode 0600) and will"
        " not be shown again",
        "corebox: serving on port 8800",
    ]
    assert machine_lines(FACTS) == ["corebox: serving on port 8800"]


def test_an_archived_default_project_is_no_key_to_offer() -> None:
    """Its key file is still there, but the key opens nothing: the banner says so and
    the `export` line asks for a project key instead."""
    lines = banner(Facts(**{**FACTS.__dict__, "default_archived": True}))
    assert "  API key    none: the default project is archived (corebox keys create)" in lines
    assert lines[-1].endswith("OPENAI_API_KEY=<a project key>")
    assert not any("default-project.key" in line for line in lines)
