"""No secret reaches the log: a full session against a real `corebox serve` run with
`--log-level debug` (project key creation, a vault credential used by an MCP tool, a
device bootstrapped and connected over the WebSocket, a builtin turn with the
deployment's model key), then the whole debug log is searched for every secret used."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from websockets.asyncio.client import connect

from allinone.core.model_providers import SEAL_CONTEXT, ModelProviders
from allinone.core.sealing import Sealer
from allinone.core.vault_secrets import VaultSecrets
from allinone.redaction import REDACTED, Redactor
from runtime.proto.version import VERSION
from storage.database import Database
from tests.api.support import core_key, http
from tests.conftest import API_KEY, start_server
from tests.support.mcp_server import McpTestServer
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.sdk import sdk_client

MODEL_KEY = "sk-deployment-model-key-0123456789"
VAULT_TOKEN = "vault-bearer-token-f00dfeed"


def test_the_redactor_rewrites_messages_arguments_and_exceptions() -> None:
    redactor = Redactor()
    redactor.add("plain-secret-value")
    redactor.add("abc")  # too short to redact safely: ignored
    record = logging.LogRecord(
        "websockets.server",
        logging.DEBUG,
        __file__,
        1,
        "> %s: %s (%s)",
        ("Authorization", "Bearer cbd-0123456789abcdef", "plain-secret-value abc"),
        None,
    )
    try:
        raise RuntimeError("failed with cbx-00112233445566778899 and sk-live-abcdefghijkl")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert redactor.filter(record)
    assert record.getMessage() == f"> Authorization: Bearer {REDACTED} ({REDACTED} abc)"
    assert record.exc_text is not None
    assert "cbx-0011" not in record.exc_text and "sk-live" not in record.exc_text
    assert record.exc_text.endswith(f"RuntimeError: failed with {REDACTED} and {REDACTED}")


def test_secrets_opened_for_a_run_are_redacted_from_then_on(tmp_path: Path) -> None:
    redactor = Redactor()
    sealer = Sealer(b"k" * 32)

    async def main() -> None:
        db = await Database.open(tmp_path / "corebox.db")
        try:
            vault = VaultSecrets(db, sealer, redactor.add)
            sealed = vault.seal("proj_a", "cred_a", {"token": "opaque-vault-value"})
            assert vault.open("proj_a", "cred_a", sealed) == {"token": "opaque-vault-value"}
        finally:
            await db.close()

    asyncio.run(main())
    providers = ModelProviders(sealer, reveal=redactor.add)
    sealed_key = sealer.seal(b"plain-model-key-without-shape", SEAL_CONTEXT)
    public = {"protocol": "chat_completions", "base_url": "http://127.0.0.1:1/v1"}
    assert providers.open(public, sealed_key).api_key == "plain-model-key-without-shape"
    line = redactor.redact("got opaque-vault-value and plain-model-key-without-shape")
    assert line == f"got {REDACTED} and {REDACTED}"


def test_a_debug_log_of_a_full_session_holds_no_secret(tmp_path: Path) -> None:
    with ModelServer().running() as model, McpTestServer(VAULT_TOKEN).running() as tools:
        data_dir = tmp_path / "data"
        server = start_server(
            data_dir,
            log_level="debug",
            extra_env={
                "COREBOX_MODEL_BASE_URL": model.base_url,
                "COREBOX_MODEL": MODEL,
                "COREBOX_MODEL_API_KEY": MODEL_KEY,
            },
        )
        try:
            secrets = _session(server.base_url, data_dir, model, tools.url)
        finally:
            server.stop()
    log = server.log.read_text(encoding="utf-8", errors="replace")
    for name, secret in secrets.items():
        assert secret not in log, f"the {name} is in the debug log"
    assert " level=debug " in log and REDACTED in log  # a debug log, in which secrets were met


def _session(base_url: str, data_dir: Path, model: ModelServer, mcp_url: str) -> dict[str, str]:
    core = core_key(data_dir)
    owner = {"Authorization": f"Bearer {core}"}
    status, project, _ = http(base_url, "POST", "/core/v1/projects", {"name": "p"}, owner)
    assert status == 200, project
    status, key, _ = http(
        base_url, "POST", f"/core/v1/projects/{project['id']}/api_keys", {}, owner
    )
    assert status == 200, key
    status, device, _ = http(base_url, "POST", "/core/v1/devices", {"name": "elsewhere"}, owner)
    assert status == 201, device
    asyncio.run(_bootstrap_and_connect(base_url, device["id"], device["credential"]))

    client = sdk_client(base_url=f"{base_url}/v1", api_key=key["key"], max_retries=0)
    vault = client.beta.agents.vaults.create(name="tools")
    credential = client.beta.agents.vaults.credentials.create(
        vault.id,
        name="calc",
        auth={"type": "static_bearer", "mcp_server_url": mcp_url, "token": VAULT_TOKEN},
    )
    tool = {
        "type": "mcp",
        "server_label": "calc",
        "transport": {"type": "http", "server_url": mcp_url},
        "credential_id": credential.id,
    }
    model.queue(Reply.call("calc__add", {"a": 40, "b": 2}), Reply.say("It is 42."))
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL, "tools": [tool]},  # type: ignore[list-item]
            environment={"type": "none"},
            input="40 + 2?",
            stream=True,
        )
    )
    assert events, "the turn streamed nothing"
    assert model.requests and model.requests[0].authorization == f"Bearer {MODEL_KEY}"
    return {
        "default project key": API_KEY,
        "Core key": core,
        "project key": key["key"],
        "device credential": device["credential"],
        "vault token": VAULT_TOKEN,
        "model key": MODEL_KEY,
    }


async def _bootstrap_and_connect(base_url: str, device_id: str, credential: str) -> None:
    bearer = {"Authorization": f"Bearer {credential}"}
    status, info, _ = await asyncio.to_thread(
        http, base_url, "POST", "/api/v1/agent-daemon/bootstrap", {"device_id": device_id}, bearer
    )
    assert status == 200, info
    query = urlencode({"device_id": device_id, "version": VERSION})
    async with connect(f"{info['ws_url']}?{query}", additional_headers=bearer) as ws:
        await ws.send(json.dumps({"type": "heartbeat", "payload": {"ts": 1}}))


@pytest.fixture(autouse=True)
def _no_leftover_filters() -> None:
    """The in-process check above installs nothing; keep it that way."""
    assert not any(isinstance(f, Redactor) for f in logging.getLogger().filters)
