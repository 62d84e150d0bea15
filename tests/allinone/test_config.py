"""Configuration precedence: defaults < corebox.toml < COREBOX_* < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_api_key_comes_only_from_the_environment(tmp_path: Path) -> None:
    assert load({}, {"COREBOX_API_KEY": "k"}, tmp_path).api_key == "k"
    assert load({}, {}, tmp_path).api_key is None
