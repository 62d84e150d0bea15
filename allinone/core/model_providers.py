"""Model providers: where a `builtin` session's model lives, frozen when the session is
created, and the one place a provider API key is sealed and opened.

`x_corebox.model_provider` (on an agent, saved or inline, or on the session create
request) is

    {"protocol": "chat_completions" | "responses"     default chat_completions
                 | "anthropic_messages",              (anthropic_messages: claude_code only)
     "base_url": "http(s)://...",                     no credentials, query or fragment
     "api_key": "...",                                write-only
     "context_window": int, "max_output_tokens": int} optional

Resolution, first found wins: the session request's, the agent's, the deployment default
(`corebox serve --model-base-url URL --model NAME`, `COREBOX_MODEL_API_KEY`). A session
freezes the result: the public part as JSON and the key sealed (AES-GCM, bound to the
context `model_provider.api_key`). On a saved agent the key is stored sealed too,
base64-encoded under `sealed_api_key`. No key is ever returned, logged or put in an
error message.

Which model is named to the provider: the deployment's `--model` for sessions on the
deployment default when it sets one, otherwise the agent's `model`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from allinone.core.errors import CoreError, InvalidRequest
from allinone.core.sealing import Sealer, SealError
from runtime.proto import execution as wire
from runtime.proto import limits

PROTOCOLS = ("chat_completions", "responses", "anthropic_messages")
# The protocols each model harness speaks.
SPOKEN = {
    "builtin": ("chat_completions", "responses"),
    "codex": ("responses",),  # the Codex CLI dropped chat completions
    "claude_code": ("anthropic_messages",),
}
KEYS = ("protocol", "base_url", "api_key", "context_window", "max_output_tokens")
SEAL_CONTEXT = "model_provider.api_key"
UNSUPPORTED = "unsupported_or_invalid_configuration"


class ProviderUnavailable(CoreError):
    """A frozen provider cannot be opened (the sealing key changed)."""


@dataclass(frozen=True)
class DefaultProvider:
    """The deployment default, from configuration. `api_key` may be empty for servers
    that need none (a placeholder is sent, as the `openai` package requires one)."""

    base_url: str
    model: str = ""
    protocol: str = "chat_completions"
    api_key: str = field(default="", repr=False)
    context_window: int = 0
    max_output_tokens: int = 0


@dataclass(frozen=True)
class Frozen:
    # protocol, base_url, context_window, max_output_tokens, source, and `model`: the
    # deployment's model for sessions on the default provider, else "" (the agent's).
    public: dict[str, Any]
    sealed_key: bytes = field(repr=False)


NO_KEY = "corebox-no-key"


def parse(value: Any, param: str) -> tuple[dict[str, Any], str | None]:
    """Validate one `model_provider` object; return (public part, api key or None).
    Raises a 400 naming the offending field; no message quotes a value."""
    if not isinstance(value, dict):
        raise InvalidRequest("model_provider must be an object.", param, code=UNSUPPORTED)
    unknown = sorted(set(value) - set(KEYS) - {"sealed_api_key"})
    if unknown:
        raise InvalidRequest(f"model_provider has unknown field(s): {', '.join(unknown)}.", param)
    protocol = value.get("protocol", "chat_completions")
    if protocol not in PROTOCOLS:
        raise InvalidRequest(
            "model_provider.protocol must be chat_completions, responses or anthropic_messages.",
            f"{param}.protocol",
            code=UNSUPPORTED,
        )
    base_url = value.get("base_url")
    if not isinstance(base_url, str) or not _url_ok(base_url):
        raise InvalidRequest(
            "model_provider.base_url must be an http(s) URL without credentials, query or "
            "fragment.",
            f"{param}.base_url",
        )
    public: dict[str, Any] = {"protocol": protocol, "base_url": base_url.rstrip("/")}
    for name in ("context_window", "max_output_tokens"):
        number = value.get(name, 0)
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise InvalidRequest(
                f"model_provider.{name} must be a whole number.", f"{param}.{name}"
            )
        public[name] = number
    if public["context_window"] and public["max_output_tokens"] > public["context_window"]:
        raise InvalidRequest(
            "model_provider.max_output_tokens cannot exceed context_window.",
            f"{param}.max_output_tokens",
        )
    api_key = value.get("api_key")
    if api_key is not None:
        check_key(api_key, f"{param}.api_key")
    return public, api_key


def check_key(api_key: Any, param: str) -> None:
    if (
        not isinstance(api_key, str)
        or not api_key.strip()
        or len(api_key.encode()) > limits.MAX_API_KEY_BYTES
        or any(ch in api_key for ch in "\x00\r\n")
    ):
        raise InvalidRequest("The API key is blank, too long or contains line breaks.", param)


def _url_ok(url: str) -> bool:
    parts = urlsplit(url)
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not (parts.username or parts.password or parts.query or parts.fragment)
    )


class ModelProviders:
    def __init__(
        self,
        sealer: Sealer | None,
        default: DefaultProvider | None = None,
        reveal: Callable[[str], None] | None = None,
    ) -> None:
        """`reveal` is told every API key this opens (the log redactor's `add`)."""
        self._sealer = sealer
        self._default = default
        self._reveal = reveal

    @property
    def has_default(self) -> bool:
        return self._default is not None

    def seal_key(self, api_key: str) -> str:
        """Seal an API key for storage inside a JSON document (base64 text)."""
        sealed = self._require_sealer().seal(api_key.encode(), SEAL_CONTEXT)
        return base64.b64encode(sealed).decode()

    def stored(self, value: Any, param: str) -> dict[str, Any]:
        """The stored form of an agent's `model_provider`: validated, the key sealed."""
        public, api_key = parse(value, param)
        if api_key is not None:
            public["sealed_api_key"] = self.seal_key(api_key)
        elif isinstance(value, dict) and isinstance(value.get("sealed_api_key"), str):
            public["sealed_api_key"] = value["sealed_api_key"]  # unchanged stored form
        return public

    def freeze(
        self, config: dict[str, Any], session_extension: dict[str, Any] | None, harness: str
    ) -> Frozen | None:
        """What a new session on `harness` freezes; None for harnesses without a model,
        and for `claude_code` without a provider of its own (the CLI then uses its own
        login; the deployment default is not an Anthropic endpoint). Raises a 400 when
        `builtin` has no provider, a provider has no key, or the harness does not speak
        the provider's protocol."""
        if harness not in SPOKEN:
            return None
        frozen = self._freeze(config, session_extension, harness)
        if frozen is not None and frozen.public["protocol"] not in SPOKEN[harness]:
            owner = "" if frozen.public["source"] == "session" else "agent."
            raise InvalidRequest(
                f"The {harness} harness does not speak {frozen.public['protocol']}; use "
                f"{' or '.join(SPOKEN[harness])}.",
                f"{owner}x_corebox.model_provider.protocol",
                code=UNSUPPORTED,
            )
        return frozen

    def _freeze(
        self, config: dict[str, Any], session_extension: dict[str, Any] | None, harness: str
    ) -> Frozen | None:
        agent_extension = config.get("x_corebox") or {}
        model = ""  # empty: the agent's own model is used
        if session_extension and session_extension.get("model_provider") is not None:
            param = "x_corebox.model_provider"
            public, api_key = parse(session_extension["model_provider"], param)
            sealed = self._sealed(api_key, None, param)
            source = "session"
        elif agent_extension.get("model_provider") is not None:
            param = "agent.x_corebox.model_provider"
            stored = agent_extension["model_provider"]
            public, api_key = parse(stored, param)
            sealed = self._sealed(api_key, stored.get("sealed_api_key"), param)
            source = "agent"
        elif harness == "claude_code":
            return None
        elif self._default is not None:
            default = self._default
            public = {
                "protocol": default.protocol,
                "base_url": default.base_url.rstrip("/"),
                "context_window": default.context_window,
                "max_output_tokens": default.max_output_tokens,
            }
            sealed = self._require_sealer().seal((default.api_key or NO_KEY).encode(), SEAL_CONTEXT)
            model = default.model
            source = "default"
        else:
            raise InvalidRequest(
                f"The {harness} harness needs a model provider: set x_corebox.model_provider, "
                "or start corebox with --model-base-url.",
                "agent.x_corebox.model_provider",
                code=UNSUPPORTED,
            )
        public.pop("sealed_api_key", None)
        return Frozen({**public, "model": model, "source": source}, sealed)

    def _sealed(self, api_key: str | None, stored: Any, param: str) -> bytes:
        if api_key is not None:
            return self._require_sealer().seal(api_key.encode(), SEAL_CONTEXT)
        if isinstance(stored, str):
            try:
                return base64.b64decode(stored, validate=True)
            except (ValueError, binascii.Error) as exc:
                raise InvalidRequest("The stored API key is damaged.", param) from exc
        raise InvalidRequest(
            "model_provider needs an api_key.", f"{param}.api_key", code=UNSUPPORTED
        )

    def open(self, public: dict[str, Any], sealed: bytes) -> wire.ModelProvider:
        """The provider as `execution_prepare` carries it, with the key opened."""
        try:
            api_key = self._require_sealer().open(sealed, SEAL_CONTEXT).decode()
        except SealError as exc:
            raise ProviderUnavailable("the model provider's key does not open") from exc
        if self._reveal is not None:
            self._reveal(api_key)
        return wire.ModelProvider(
            protocol=public["protocol"],
            base_url=public["base_url"],
            api_key=api_key,
            context_window=int(public.get("context_window") or 0),
            max_output_tokens=int(public.get("max_output_tokens") or 0),
        )

    def _require_sealer(self) -> Sealer:
        if self._sealer is None:
            raise ProviderUnavailable("no sealing key is configured")
        return self._sealer


def public_view(public: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a session shows of its provider: never a key."""
    if public is None:
        return None
    return {k: public.get(k) for k in ("protocol", "base_url", "model", "source")}
