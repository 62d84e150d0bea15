"""Automation targets: validation against the caller's project, the public rendering, and
the request a delivery replays.

`prepare(q, project_id, target)` checks every reference (session, agent, vaults,
environment template) inside the project, resolves an inline agent configuration the
way a session would, and returns a `Prepared` with:
- `public`: the target as the Automation resource shows it (no confidential inputs);
- `request`: the target request itself, to be stored sealed and replayed on delivery;
- `session_id`: the existing session it posts to, if any (for the list filter).
Any failure is a 400, or a 404 naming the reference, exactly as if it did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core import environment_templates
from allinone.core.errors import InvalidRequest, NotFound
from allinone.core.hosted_support import check_supported
from allinone.core.sessions.inputs import messages_of
from allinone.core.shapes import automation_models as m
from allinone.core.shapes.agent_resources import agent_config as render_agent_config
from allinone.core.shapes.models import SessionAgentParam
from storage import agents as agent_rows
from storage import sessions
from storage import templates as template_rows
from storage import vaults as vault_rows
from storage.rows import Queryable


@dataclass(frozen=True)
class Prepared:
    public: dict[str, Any]
    request: dict[str, Any]
    session_id: str | None


def _missing(param: str) -> NotFound:
    return NotFound(param=param)


async def prepare(q: Queryable, project_id: str, target: m.TargetParam) -> Prepared:
    request = msgspec.to_builtins(target)
    if isinstance(target, m.ExistingSessionTargetParam):
        if not target.instructions.strip():
            raise InvalidRequest("instructions must not be empty.", "target.instructions")
        messages_of(target.instructions, "target.instructions")  # the input it becomes
        if await sessions.get(q, project_id, target.session_id) is None:
            raise _missing("target.session_id")
        existing = {
            "type": "existing_session",
            "session_id": target.session_id,
            "instructions": target.instructions,
        }
        return Prepared(existing, request, target.session_id)
    agent_id = None if target.agent_id is UNSET else target.agent_id
    if (agent_id is None) == (target.agent is UNSET):
        raise InvalidRequest(
            "Give exactly one of target.agent and target.agent_id.", "target.agent"
        )
    agent_view = None
    if agent_id is not None:
        if await agent_rows.get(q, project_id, agent_id) is None:
            raise _missing("target.agent_id")
    elif isinstance(target.agent, SessionAgentParam):
        if target.agent.model is UNSET:
            raise InvalidRequest("target.agent.model is required.", "target.agent.model")
        config = agent_config.defaults()
        agent_config.apply_fields(config, target.agent)
        agent_config.harness_for(config)
        agent_view = msgspec.to_builtins(render_agent_config(config))
    vault_ids = [] if target.vault_ids in (UNSET, None) else list(target.vault_ids or [])
    for index, vault_id in enumerate(vault_ids):
        if await vault_rows.get_vault(q, project_id, vault_id) is None:
            raise _missing(f"target.vault_ids[{index}]")
    if not target.input:
        raise InvalidRequest("target.input must contain at least one message.", "target.input")
    messages_of(target.input, "target.input")  # each message says something; the size
    metadata = agent_config.check_metadata(
        None if target.metadata is UNSET else target.metadata, "target.metadata"
    )
    public: dict[str, Any] = {
        "type": "new_session",
        "agent": agent_view,
        "agent_id": agent_id,
        "environment": await _environment(q, project_id, target.environment),
        "input": [
            {"type": "message", "role": "user", "content": msgspec.to_builtins(msg.content)}
            for msg in target.input
        ],
        "metadata": metadata,
        "vault_ids": vault_ids,
    }
    return Prepared(public, request, None)


async def _environment(
    q: Queryable, project_id: str, environment: m.EnvironmentParam
) -> dict[str, Any]:
    if isinstance(environment, m.NoneEnvironmentParam):
        return {"type": "none"}
    if isinstance(environment, m.SelfHostedEnvironmentParam):
        return {
            "type": "self_hosted",
            "capability_directories": list(environment.capability_directories or []),
            "environment_id": None,
            "workspace_directory": environment.workspace_directory,
        }
    check_supported(msgspec.to_builtins(environment), "target.environment")
    template_id = environment.environment_template_id
    if isinstance(template_id, str) and await template_rows.get(q, project_id, template_id) is None:
        raise _missing("target.environment.environment_template_id")
    if environment.environment_id is not UNSET and (
        template_id is not UNSET or _has_inline_config(environment)
    ):
        raise InvalidRequest(
            "environment_id cannot be combined with a template or inline configuration.",
            "target.environment.environment_id",
        )
    view: dict[str, Any] = {
        "type": "openai_hosted",
        "environment_id": None
        if environment.environment_id is UNSET
        else environment.environment_id,
        "environment_template_id": None if template_id is UNSET else template_id,
        "container_size": None
        if environment.container_size is UNSET
        else environment.container_size,
    }
    body = environment_templates.template_body(environment)
    _, public, _ = environment_templates.merge(body, *environment_templates.empty(), None)
    for key in environment_templates.PUBLIC_FIELDS:
        given = getattr(environment, key)
        view[key] = None if given is UNSET or given is None else public[key]
    return view


def _has_inline_config(environment: m.HostedEnvironmentParam) -> bool:
    fields = (
        "capability_directories",
        "desktop",
        "env",
        "files",
        "network",
        "packages",
        "plugins",
        "setup_commands",
        "skills",
    )
    return any(getattr(environment, name) is not UNSET for name in fields)
