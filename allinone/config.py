"""Configuration: embedded defaults < `corebox.toml` < `COREBOX_*` environment < flags.

Nothing here reads the environment at import time; `load` is given the environment and
the flags by the CLI.

The deployment's default model provider (for the `builtin` harness) is `model_base_url`,
`model` and `model_protocol` (`chat_completions`, the default, or `responses`); its API
key comes only from `COREBOX_MODEL_API_KEY`, never from a file or a flag, and is kept out
of the Config's repr. `model_timeout_seconds` (default 600) bounds one model call of the
`builtin` harness, and `model_idle_timeout_seconds` (default 300) the wait for a model
server's answer and for each event of its stream, for every model server it calls.

`retention_days` (default 30, may be 0) is how long deleted sessions, agents, artifacts
and other tombstones are kept before the retention job purges them for good.
`log_format` is `text` (key=value lines, the default) or `json` (one object per line).

`workspace_roots` are the host directories under which the default project may bind
`self_hosted` workspaces (a list in `corebox.toml`, `os.pathsep`-separated in
`COREBOX_WORKSPACE_ROOTS`, `--workspace-root` repeated); the default is the home
directory. Other projects use only the roots the owner grants them.

`database_url` (`--database-url`, `COREBOX_DATABASE_URL`) puts the state in a
PostgreSQL database (`postgresql://user:password@host:port/name`) instead of the embedded
SQLite file in the data directory; the data directory still holds the keys, blobs and
workspaces. It is kept out of the Config's repr (it may carry a password).

`prices` (only in `corebox.toml`) is the owner's price table for session budgets: per
model, USD cents per million input and output tokens (`[prices."gpt-4o"]` with `input =
250` and `output = 1000`). A session whose model has a price enforces and reports its
`spend_control` in cents; without one, in tokens.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("text", "json")
KEYS = (
    "host",
    "port",
    "data_dir",
    "log_level",
    "log_format",
    "model_base_url",
    "model",
    "model_protocol",
    "model_timeout_seconds",
    "model_idle_timeout_seconds",
    "public_url",
    "retention_days",
    "database_url",
)
MODEL_PROTOCOLS = ("chat_completions", "responses")
MAX_RETENTION_DAYS = 36500
MODEL_TIMEOUT_SECONDS = 600.0  # one model call, as the official SDK bounds a request
MODEL_IDLE_TIMEOUT_SECONDS = 300.0  # the answer, and each stream event after it


def local_base_url(host: str, port: int) -> str:
    """The address a client on this machine reaches a server bound to `host:port` at (a
    wildcard bind means loopback), without a trailing slash."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}"


def server_url(given: str | None, environ: Mapping[str, str], config: Config) -> str:
    """The running server a client command talks to, without a trailing slash: `--url`
    (`given`), else `COREBOX_URL`, else the configured host and port on this machine."""
    url = given or environ.get("COREBOX_URL") or local_base_url(config.host, config.port)
    return checked_url(url, "--url" if given else "COREBOX_URL")


def checked_url(url: str, name: str) -> str:
    """The server's address `url` names, without a trailing slash, or ConfigError when it
    is not an http(s) address (`127.0.0.1:8800` without its scheme is the usual slip).
    An address ending in `/v1` (the banner's OPENAI_BASE_URL, the API's address) names
    the server that serves that API: `http://127.0.0.1:8800/v1` is
    `http://127.0.0.1:8800`."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{name} must be an http:// or https:// address, such as http://127.0.0.1:8800;"
            f" got {url!r}"
        )
    return url.strip().rstrip("/").removesuffix("/v1")


class ConfigError(ValueError):
    """A configuration value is unusable; the message names it."""


@dataclass(frozen=True)
class Config:
    host: str
    port: int
    data_dir: Path
    log_level: str
    log_format: str = "text"
    api_key: str | None = None
    config_file: Path | None = None
    model_base_url: str | None = None
    model: str | None = None
    model_protocol: str = "chat_completions"
    public_url: str | None = None
    model_api_key: str | None = field(default=None, repr=False)
    # The builtin harness's bounds on one model call, in seconds (any model server).
    model_timeout_seconds: float = MODEL_TIMEOUT_SECONDS
    model_idle_timeout_seconds: float = MODEL_IDLE_TIMEOUT_SECONDS
    workspace_roots: tuple[Path, ...] = ()
    # How long deleted data is kept before the retention job (or `corebox gc`) purges it.
    retention_seconds: int = 30 * 86400
    # model -> (USD cents per million input tokens, per million output tokens)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    # A PostgreSQL database for the state; None keeps it in the data directory (SQLite).
    database_url: str | None = field(default=None, repr=False)


def default_data_dir(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(environ.get("HOME", str(Path.home()))) / ".local" / "share"
    return base / "corebox"


def load(flags: Mapping[str, Any], environ: Mapping[str, str], cwd: Path) -> Config:
    """Resolve the configuration; `flags` holds only the flags the user gave."""
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 8800,
        "data_dir": str(default_data_dir(environ)),
        "log_level": "info",
        "log_format": "text",
        "model_base_url": None,
        "model": None,
        "model_protocol": "chat_completions",
        "model_timeout_seconds": MODEL_TIMEOUT_SECONDS,
        "model_idle_timeout_seconds": MODEL_IDLE_TIMEOUT_SECONDS,
        "public_url": None,
        "retention_days": 30,
        "database_url": None,
    }
    config_path = flags.get("config") or environ.get("COREBOX_CONFIG")
    config_file: Path | None = None
    if config_path:
        config_file = Path(config_path)
        if not config_file.is_file():
            raise ConfigError(f"config file {config_file} does not exist")
    elif (cwd / "corebox.toml").is_file():
        config_file = cwd / "corebox.toml"
    if config_file is not None:
        values.update(_read_toml(config_file))
    for key in KEYS:
        env_value = environ.get(f"COREBOX_{key.upper()}")
        if env_value:
            values[key] = env_value
    for key in KEYS:
        if flags.get(key) is not None:
            values[key] = flags[key]
    roots = _workspace_roots(config_file, flags, environ)
    return Config(
        workspace_roots=roots,
        prices=_prices(config_file),
        host=str(values["host"]),
        port=_port(values["port"]),
        data_dir=Path(os.path.expanduser(str(values["data_dir"]))),
        log_level=_log_level(values["log_level"]),
        log_format=_log_format(values["log_format"]),
        api_key=environ.get("COREBOX_API_KEY") or None,
        config_file=config_file,
        public_url=_public_url(values["public_url"]),
        retention_seconds=_retention(values["retention_days"]),
        database_url=_database_url(values["database_url"]),
        model_timeout_seconds=_seconds(values, "model_timeout_seconds"),
        model_idle_timeout_seconds=_seconds(values, "model_idle_timeout_seconds"),
        **_model(values, environ),
    )


def _model(values: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    base_url = values["model_base_url"] or None
    model = values["model"] or None
    protocol = str(values["model_protocol"] or "chat_completions")
    if protocol not in MODEL_PROTOCOLS:
        raise ConfigError(f"model protocol must be one of {', '.join(MODEL_PROTOCOLS)}")
    if base_url is None:
        if model is not None:
            raise ConfigError("--model needs --model-base-url (the model server's address)")
        return {}
    parts = urlsplit(str(base_url))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("model base URL must be an http(s) URL, e.g. http://127.0.0.1:11434/v1")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("model base URL takes no credentials, query or fragment")
    return {
        "model_base_url": str(base_url),
        "model": None if model is None else str(model),
        "model_protocol": protocol,
        "model_api_key": environ.get("COREBOX_MODEL_API_KEY") or None,
    }


def _workspace_roots(
    config_file: Path | None, flags: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Path, ...]:
    """The configured roots, by the usual precedence; each must be an absolute path."""
    raw: Any = [environ.get("HOME", str(Path.home()))]
    if config_file is not None:
        raw = _read_toml_roots(config_file, raw)
    if environ.get("COREBOX_WORKSPACE_ROOTS"):
        raw = [p for p in environ["COREBOX_WORKSPACE_ROOTS"].split(os.pathsep) if p]
    if flags.get("workspace_roots"):
        raw = list(flags["workspace_roots"])
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ConfigError("workspace_roots must be a list of directories")
    roots = tuple(Path(os.path.expanduser(item)) for item in raw)
    for root in roots:
        if not root.is_absolute():
            raise ConfigError(f"workspace root {root} must be an absolute path")
    return roots


def _read_toml_roots(path: Path, default: Any) -> Any:
    import tomllib  # only where a configuration file is read

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return data.get("serve", data).get("workspace_roots", default)


def _prices(config_file: Path | None) -> dict[str, tuple[float, float]]:
    if config_file is None:
        return {}
    import tomllib  # only where a configuration file is read

    data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    table = data.get("prices", data.get("serve", {}).get("prices", {}))
    if not isinstance(table, dict):
        raise ConfigError("prices must be a table of models")
    prices: dict[str, tuple[float, float]] = {}
    for model, price in table.items():
        if not isinstance(price, dict) or set(price) - {"input", "output"}:
            raise ConfigError(f"prices.{model} takes input and output (cents per million)")
        values = (price.get("input", 0), price.get("output", 0))
        if not all(isinstance(v, int | float) and v >= 0 for v in values):
            raise ConfigError(f"prices.{model}: prices are non-negative numbers")
        prices[str(model)] = (float(values[0]), float(values[1]))
    return prices


def _public_url(value: Any) -> str | None:
    """The origin remote Runtimes dial; unset means the listening address."""
    if not value:
        return None
    parts = urlsplit(str(value))
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
        raise ConfigError("public URL must be an http(s) origin, e.g. http://core-host:8800")
    return f"{parts.scheme}://{parts.netloc}"


def _database_url(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith(("postgresql://", "postgres://")):
        raise ConfigError("database_url must be a postgresql:// URL")
    return value


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only where a configuration file is read

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    section = data.get("serve", data)
    unknown = sorted(set(section) - set(KEYS) - {"serve", "workspace_roots", "prices"})
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(map(_guessed, unknown))}")
    return {key: section[key] for key in KEYS if key in section}


def _guessed(name: str) -> str:
    """An unknown setting, with the known one it is a near spelling of."""
    import difflib  # only a refused file pays for it

    near = difflib.get_close_matches(name, KEYS, n=1, cutoff=0.75)
    return f"{name} (did you mean {near[0]}?)" if near else name


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"port must be a number, not {value!r}") from exc
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range")
    return port


def _seconds(values: dict[str, Any], key: str) -> float:
    """A positive number of seconds (a wait that must end)."""
    value = values[key]
    try:
        seconds = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key} must be a number of seconds, not {value!r}") from exc
    if not 0 < seconds < math.inf:
        raise ConfigError(f"{key} must be more than 0 seconds")
    return seconds


def _retention(value: Any) -> int:
    """`retention_days` (may be fractional or 0) in whole seconds."""
    try:
        days = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"retention_days must be a number, not {value!r}") from exc
    if not 0 <= days <= MAX_RETENTION_DAYS:
        raise ConfigError(f"retention_days {days} is out of range (0 to {MAX_RETENTION_DAYS})")
    return int(days * 86400)


def _log_level(value: Any) -> str:
    level = str(value).lower()
    if level not in LOG_LEVELS:
        raise ConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}")
    return level


def _log_format(value: Any) -> str:
    log_format = str(value).lower()
    if log_format not in LOG_FORMATS:
        raise ConfigError(f"log format must be one of {', '.join(LOG_FORMATS)}")
    return log_format
