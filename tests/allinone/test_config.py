"""Configuration precedence: defaults < corebox.toml < COREBOX_* < flags."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest

from allinone import data_commands
from allinone.config import ConfigError, load


def test_defaults(tmp_path: Path) -> None:
    config = load({}, {"HOME": str(tmp_path)}, tmp_path)
    assert (config.host, config.port, config.log_level) == ("127.0.0.1", 8800, "info")
    assert config.data_dir == tmp_path / ".local" / "share" / "corebox"


def test_xdg_data_home_is_the_default_base(tmp_path: Path) -> None:
    config = load({}, {"XDG_DATA_HOME": str(tmp_path / "xdg")}, tmp_path)
    assert config.data_dir == tmp_path / "xdg" / "corebox"


def test_toml_then_environment_then_flags(tmp_path: Path) -> None:
    (tmp_path / "corebox.toml").write_text('port = 9001\nlog_level = "debug"\nhost = "::1"\n')
    config = load({}, {}, tmp_path)
    assert (config.port, config.log_level, config.host) == (9001, "debug", "::1")
    config = load({}, {"COREBOX_PORT": "9002"}, tmp_path)
    assert (config.port, config.log_level) == (9002, "debug")
    config = load({"port": 9003}, {"COREBOX_PORT": "9002"}, tmp_path)
    assert config.port == 9003


def test_bad_values_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="port"):
        load({}, {"COREBOX_PORT": "eighty"}, tmp_path)
    with pytest.raises(ConfigError, match="log level"):
        load({"log_level": "loud"}, {}, tmp_path)
    (tmp_path / "corebox.toml").write_text("colour = 1\n")
    with pytest.raises(ConfigError, match="colour"):
        load({}, {}, tmp_path)
    (tmp_path / "corebox.toml").write_text("prot = 8000\ncolour = 1\nretention_dayz = 3\n")
    with pytest.raises(ConfigError) as caught:
        load({}, {}, tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'corebox.toml'}: unknown setting(s) colour, prot (did you mean port?),"
        " retention_dayz (did you mean retention_days?)"
    )


def test_api_key_comes_only_from_the_environment(tmp_path: Path) -> None:
    assert load({}, {"COREBOX_API_KEY": "k"}, tmp_path).api_key == "k"
    assert load({}, {}, tmp_path).api_key is None


def test_the_default_model_provider_from_file_environment_and_flags(tmp_path: Path) -> None:
    config = load({}, {}, tmp_path)
    assert (config.model_base_url, config.model, config.model_api_key) == (None, None, None)
    (tmp_path / "corebox.toml").write_text(
        'model_base_url = "http://127.0.0.1:11434/v1"\nmodel = "llama3.2"\n'
    )
    environ = {"COREBOX_MODEL_API_KEY": "sk-secret-value", "COREBOX_MODEL_PROTOCOL": "responses"}
    config = load({}, environ, tmp_path)
    assert (config.model_base_url, config.model, config.model_protocol) == (
        "http://127.0.0.1:11434/v1",
        "llama3.2",
        "responses",
    )
    assert config.model_api_key == "sk-secret-value"
    assert "sk-secret-value" not in repr(config)
    config = load({"model": "qwen", "model_base_url": "http://h:8000/v1"}, environ, tmp_path)
    assert (config.model_base_url, config.model) == ("http://h:8000/v1", "qwen")


def test_bad_model_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model-base-url"):
        load({"model": "llama3.2"}, {}, tmp_path)
    with pytest.raises(ConfigError, match="http"):
        load({"model_base_url": "ftp://host/v1"}, {}, tmp_path)
    with pytest.raises(ConfigError, match="credentials"):
        load({"model_base_url": "http://user:pw@host/v1"}, {}, tmp_path)
    with pytest.raises(ConfigError, match="protocol"):
        load({"model_base_url": "http://host/v1", "model_protocol": "anthropic"}, {}, tmp_path)
    (tmp_path / "corebox.toml").write_text('model_api_key = "no"\n')
    with pytest.raises(ConfigError, match="model_api_key"):
        load({}, {}, tmp_path)


def test_model_call_bounds_from_file_environment_and_flags(tmp_path: Path) -> None:
    config = load({}, {}, tmp_path)
    assert (config.model_timeout_seconds, config.model_idle_timeout_seconds) == (600, 300)
    (tmp_path / "corebox.toml").write_text(
        "model_timeout_seconds = 900\nmodel_idle_timeout_seconds = 120\n"
    )
    config = load({}, {}, tmp_path)
    assert (config.model_timeout_seconds, config.model_idle_timeout_seconds) == (900, 120)
    config = load({}, {"COREBOX_MODEL_IDLE_TIMEOUT_SECONDS": "2.5"}, tmp_path)
    assert (config.model_timeout_seconds, config.model_idle_timeout_seconds) == (900, 2.5)
    config = load({"model_timeout_seconds": "30"}, {}, tmp_path)
    assert config.model_timeout_seconds == 30
    for bad in ("0", "-1", "soon", "nan", "inf"):
        with pytest.raises(ConfigError, match="model_idle_timeout_seconds"):
            load({"model_idle_timeout_seconds": bad}, {}, tmp_path)


def test_public_url_is_an_origin(tmp_path: Path) -> None:
    config = load({"public_url": "https://core.example:8800/"}, {}, tmp_path)
    assert config.public_url == "https://core.example:8800"
    assert load({}, {"COREBOX_PUBLIC_URL": "http://10.0.0.2:8800"}, tmp_path).public_url == (
        "http://10.0.0.2:8800"
    )
    assert load({}, {}, tmp_path).public_url is None
    with pytest.raises(ConfigError, match="public URL"):
        load({"public_url": "ws://core:8800/path"}, {}, tmp_path)


def test_workspace_roots_default_to_home_and_follow_the_precedence(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert load({}, {"HOME": home}, tmp_path).workspace_roots == (Path(home),)
    (tmp_path / "corebox.toml").write_text('workspace_roots = ["/srv/a", "/srv/b"]\n')
    config = load({}, {"HOME": home}, tmp_path)
    assert config.workspace_roots == (Path("/srv/a"), Path("/srv/b"))
    config = load({}, {"HOME": home, "COREBOX_WORKSPACE_ROOTS": "/x:/y"}, tmp_path)
    assert config.workspace_roots == (Path("/x"), Path("/y"))
    config = load({"workspace_roots": ["/z"]}, {"COREBOX_WORKSPACE_ROOTS": "/x"}, tmp_path)
    assert config.workspace_roots == (Path("/z"),)


def test_workspace_roots_must_be_absolute_directories(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workspace root"):
        load({"workspace_roots": ["relative"]}, {}, tmp_path)
    (tmp_path / "corebox.toml").write_text('workspace_roots = "/not/a/list"\n')
    with pytest.raises(ConfigError, match="workspace_roots"):
        load({}, {}, tmp_path)


def test_the_price_table_is_read_and_checked(tmp_path: Path) -> None:
    config = tmp_path / "corebox.toml"
    config.write_text('[prices."gpt-x"]\ninput = 250\noutput = 1000.5\n', encoding="utf-8")
    assert load({}, {}, tmp_path).prices == {"gpt-x": (250.0, 1000.5)}
    config.write_text('[prices."gpt-x"]\ninput = -1\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        load({}, {}, tmp_path)
    config.write_text('[prices."gpt-x"]\ncurrency = "EUR"\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        load({}, {}, tmp_path)


def test_the_log_format_comes_from_flags_environment_or_file(tmp_path: Path) -> None:
    assert load({}, {}, tmp_path).log_format == "text"
    assert load({}, {"COREBOX_LOG_FORMAT": "json"}, tmp_path).log_format == "json"
    (tmp_path / "corebox.toml").write_text('log_format = "json"\n')
    assert load({"log_format": "text"}, {}, tmp_path).log_format == "text"
    assert load({}, {}, tmp_path).log_format == "json"
    with pytest.raises(ConfigError, match="log format must be one of text, json"):
        load({"log_format": "xml"}, {}, tmp_path)


def test_database_url_from_toml_environment_or_flag_and_out_of_the_repr(tmp_path: Path) -> None:
    assert load({}, {}, tmp_path).database_url is None  # the data directory's SQLite
    (tmp_path / "corebox.toml").write_text('database_url = "postgresql://u:pw@db/toml"\n')
    assert load({}, {}, tmp_path).database_url == "postgresql://u:pw@db/toml"
    environ = {"COREBOX_DATABASE_URL": "postgresql://u:pw@db/env"}
    assert load({}, environ, tmp_path).database_url == "postgresql://u:pw@db/env"
    flags = {"database_url": "postgres://u:pw@db/flag"}
    config = load(flags, environ, tmp_path)
    assert config.database_url == "postgres://u:pw@db/flag"
    assert "pw" not in repr(config)
    with pytest.raises(ConfigError, match="database_url"):
        load({"database_url": "mysql://db/x"}, {}, tmp_path)


def test_the_data_directory_commands_refuse_a_postgresql_configuration(tmp_path: Path) -> None:
    environ = {"COREBOX_DATABASE_URL": "postgresql://u@db/x", "HOME": str(tmp_path)}
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = data_commands.run_command(
            argparse.Namespace(command="storage", data_dir=str(tmp_path), config=None, json=False),
            environ,
            io.StringIO(),
        )
    assert code == 1
    assert "PostgreSQL" in err.getvalue()
