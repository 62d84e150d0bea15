"""The run manifest of a turn (`turn.x_corebox.manifest`): what it actually ran.

Core writes its part when it claims the turn: the configuration digest and agent
version, the model, protocol and harness, the digest of the system prompt it sent, the
policy in force (tool policy, overlays). The Runtime's part arrives on the `done` frame
(metadata `x_corebox_manifest`, JSON, from harnesses that report it): the digests of the
system prompt and of the tool list the model received, the provider's request ids, the
stop reason and the history the context window left out. At settlement the two are
merged and the tool catalog version decided: 1 for a session's first reported tool
list, one more each time the tool list digest differs from the previous turn's (an MCP
server whose tools changed, a session update of the tools).

Digests are `sha256:<hex>` of canonical JSON (sorted keys, no spaces, UTF-8).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from storage import execution_settings, manifests
from storage.database import Tx
from storage.rows import loads

log = logging.getLogger(__name__)

RUNTIME_KEY = "x_corebox_manifest"
RUNTIME_FIELDS = (
    "system_prompt_digest",
    "tools_digest",
    "request_ids",
    "stop_reason",
    "history_omitted",
    "model",
    "protocol",
)


def digest_of(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def claimed(
    session: dict[str, Any], config_digest: str, overlays: list[dict[str, Any]]
) -> dict[str, Any]:
    """Core's part, written with the claim."""
    settings = execution_settings.settings_of(session)
    provider = settings.get("model_provider") or {}
    agent = session["agent"]
    return {
        "config_digest": config_digest,
        "agent_version": session.get("agent_version"),
        "harness": session["harness"],
        "model": provider.get("model") or agent.get("model"),
        "protocol": provider.get("protocol") or session["harness"],
        "system_prompt_digest": digest_of(agent.get("instructions") or ""),
        "tools_digest": None,
        "tool_catalog_version": None,
        "policy": {
            "tool_policy": settings.get("tool_policy"),
            "overlays": [
                {"version": o["version"], "kind": o["kind"], "value": o["value"]} for o in overlays
            ],
        },
        "request_ids": [],
        "stop_reason": None,
        "history_omitted": None,
    }


async def settle(tx: Tx, session_id: str, turn_id: str, metadata: dict[str, str] | None) -> None:
    """Merge the Runtime's part into the turn's manifest and decide its catalog version."""
    text = await manifests.stored_text(tx, turn_id)
    if text is None:
        return
    manifest: dict[str, Any] = dict(loads(text))
    reported = _reported(metadata)
    updates = {k: reported[k] for k in RUNTIME_FIELDS if reported.get(k) is not None}
    if (
        not updates
        and manifest.get("tools_digest") is None
        and manifests.is_stored_form(manifest, text)
    ):
        return  # nothing to merge: storing it again would store the same document
    manifest.update(updates)
    if manifest.get("tools_digest") is not None:
        earlier = await manifests.previous(tx, session_id, turn_id)
        version = int((earlier or {}).get("tool_catalog_version") or 0)
        if earlier is None or earlier.get("tools_digest") != manifest["tools_digest"]:
            version += 1
        manifest["tool_catalog_version"] = version
    await manifests.put(tx, turn_id, manifest)


def _reported(metadata: dict[str, str] | None) -> dict[str, Any]:
    raw = (metadata or {}).get(RUNTIME_KEY)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("a run manifest that is not JSON was ignored")
        return {}
    return value if isinstance(value, dict) else {}
