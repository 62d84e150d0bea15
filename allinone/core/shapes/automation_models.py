"""Automation shapes (reference 4.7 / 5.5): request bodies (strict) and resources.

A new-session target's confidential inputs (hosted `env`, `setup_commands`, inline file
data, MCP transport secrets of an inline agent) are accepted here but never appear in a
resource: the request is kept sealed for delivery, the resource is rendered separately.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from allinone.core.shapes import template_models as hosted
from allinone.core.shapes.agent_resources import AutomationAgentConfig, showable_config
from allinone.core.shapes.models import InputMessageParam, SessionAgentParam

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
_TAGGED: dict[str, Any] = {"forbid_unknown_fields": True, "tag_field": "type"}
Metadata = dict[str, str]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
# The last second the scheduler's calendar can hold (9999-12-31T23:59:59Z).
MAX_RUN_AT = 253_402_300_799
RunAt = Annotated[int, msgspec.Meta(le=MAX_RUN_AT)]


NoneEnvironmentParam = hosted.NoneEnvironmentParam
HostedEnvironmentParam = hosted.HostedEnvironmentParam
SelfHostedEnvironmentParam = hosted.SelfHostedEnvironmentParam
EnvironmentParam = hosted.EnvironmentParam


class NewSessionTargetParam(msgspec.Struct, tag="new_session", **_TAGGED):
    environment: EnvironmentParam
    input: list[InputMessageParam]
    agent: SessionAgentParam | UnsetType = UNSET
    agent_id: str | UnsetType = UNSET
    metadata: Metadata | UnsetType | None = UNSET
    vault_ids: list[str] | UnsetType | None = UNSET


class ExistingSessionTargetParam(msgspec.Struct, tag="existing_session", **_TAGGED):
    session_id: str
    instructions: str


TargetParam = NewSessionTargetParam | ExistingSessionTargetParam


class PeriodicAutomationCreate(msgspec.Struct, tag="periodic", **_TAGGED):
    name: Name
    expression: str
    timezone: str
    target: TargetParam
    metadata: Metadata | UnsetType = UNSET


class OnceAutomationCreate(msgspec.Struct, tag="once", **_TAGGED):
    name: Name
    run_at: RunAt
    target: TargetParam
    metadata: Metadata | UnsetType = UNSET


AutomationCreate = PeriodicAutomationCreate | OnceAutomationCreate


class AutomationUpdate(msgspec.Struct, **_STRICT):
    name: Name | UnsetType = UNSET
    metadata: Metadata | UnsetType = UNSET
    expression: str | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    run_at: RunAt | UnsetType = UNSET
    target: TargetParam | UnsetType = UNSET


# --- resources ---------------------------------------------------------------------------


class CreatedByDeveloper(msgspec.Struct, tag="developer", tag_field="type"):
    pass


class CreatedByAgent(msgspec.Struct, tag="agent", tag_field="type"):
    session_id: str
    tool_call_id: str


class InputTextContent(msgspec.Struct, tag="input_text", tag_field="type"):
    text: str


class InputImageContent(msgspec.Struct, tag="input_image", tag_field="type"):
    image_url: str


class TargetInputMessage(msgspec.Struct):
    type: Literal["message"]
    role: Literal["user"]
    content: list[InputTextContent | InputImageContent]


class NoneEnvironment(msgspec.Struct, tag="none", tag_field="type"):
    pass


class HostedEnvironment(msgspec.Struct, tag="openai_hosted", tag_field="type"):
    """Null means inherit (from the template or the defaults)."""

    capability_directories: list[str] | None
    container_size: Literal["small", "medium", "large"] | None
    desktop: hosted.Desktop | None
    environment_id: str | None
    environment_template_id: str | None
    files: list[hosted.FileIdFile | hosted.InlineFile] | None
    network: hosted.Network | None
    packages: hosted.Packages | None
    plugins: list[hosted.HostedPlugin] | None
    skills: list[hosted.SkillReference | hosted.InlineSkill] | None


class SelfHostedEnvironment(msgspec.Struct, tag="self_hosted", tag_field="type"):
    capability_directories: list[str]
    environment_id: str | None
    workspace_directory: str


class NewSessionTarget(msgspec.Struct, tag="new_session", tag_field="type"):
    agent: AutomationAgentConfig | None
    agent_id: str | None
    environment: NoneEnvironment | HostedEnvironment | SelfHostedEnvironment
    input: list[TargetInputMessage]
    metadata: dict[str, str]
    vault_ids: list[str]


class ExistingSessionTarget(msgspec.Struct, tag="existing_session", tag_field="type"):
    session_id: str
    instructions: str


Target = NewSessionTarget | ExistingSessionTarget
CreatedBy = CreatedByDeveloper | CreatedByAgent


class PeriodicAutomation(msgspec.Struct, tag="periodic", tag_field="type"):
    id: str
    name: str
    metadata: dict[str, str]
    created_at: int
    created_by: CreatedBy
    target: Target
    expression: str
    timezone: str
    status: Literal["active", "paused"]
    object: Literal["agent.automation"] = "agent.automation"


class OnceAutomation(msgspec.Struct, tag="once", tag_field="type"):
    id: str
    name: str
    metadata: dict[str, str]
    created_at: int
    created_by: CreatedBy
    target: Target
    run_at: int
    status: Literal["active", "paused", "completed"]
    object: Literal["agent.automation"] = "agent.automation"


Automation = PeriodicAutomation | OnceAutomation


class AutomationDeleted(msgspec.Struct):
    id: str
    deleted: bool = True
    object: Literal["agent.automation.deleted"] = "agent.automation.deleted"


class ManualSource(msgspec.Struct, tag="manual", tag_field="type"):
    pass


class ScheduleSource(msgspec.Struct, tag="automation", tag_field="type"):
    automation: Automation


class InvocationError(msgspec.Struct):
    code: str
    message: str


class AutomationInvocation(msgspec.Struct):
    id: str
    automation_id: str
    created_at: int
    scheduled_at: int | None
    session_id: str | None
    status: Literal["queued", "completed", "failed", "skipped"]
    skip_reason: Literal["pending_delivery"] | None
    source: ManualSource | ScheduleSource
    error: InvocationError | None
    object: Literal["agent.automation.invocation"] = "agent.automation.invocation"


def automation(row: dict[str, Any]) -> Automation:
    body = {
        key: row[key]
        for key in ("id", "type", "name", "metadata", "created_at", "created_by", "target")
    }
    body["status"] = row["status"]
    if row["type"] == "periodic":
        body.update(expression=row["expression"], timezone=row["timezone"])
    else:
        body["run_at"] = row["run_at"]
    result: Automation = msgspec.convert(showable(body), Automation)
    return result


def showable(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its target's stored agent configuration shown totally (see
    `agent_resources.agent`), so one stored field cannot fail every list."""
    target = body.get("target")
    if isinstance(target, dict) and isinstance(target.get("agent"), dict):
        body = {**body, "target": {**target, "agent": showable_config(target["agent"])}}
    return body


def invocation(row: dict[str, Any]) -> AutomationInvocation:
    source: ManualSource | ScheduleSource = ManualSource()
    if row["source"] == "automation":
        snapshot: Automation = msgspec.convert(showable(row["automation_snapshot"]), Automation)
        source = ScheduleSource(automation=snapshot)
    error = None
    if row["error_code"] is not None:
        error = InvocationError(code=row["error_code"], message=row["error_message"] or "")
    return AutomationInvocation(
        id=row["id"],
        automation_id=row["automation_id"],
        created_at=row["created_at"],
        scheduled_at=row["scheduled_at"],
        session_id=row["session_id"],
        status=row["status"],
        skip_reason=row["skip_reason"],
        source=source,
        error=error,
    )
