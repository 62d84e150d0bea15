"""The table of every route the OpenAPI document knows in detail.

Each `Operation` names the msgspec type a handler decodes (`body`) and the type or
hand-written schema (`allinone.core.api.schemas`) of what it returns. A route added to
the app without an entry here is still listed by `openapi.document`, only without body
schemas, so extend this table together with the route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allinone.core import archive
from allinone.core.api import project_models as projects
from allinone.core.api.agent_versions import PromoteBody, RollbackBody
from allinone.core.api.bundles import ExportRequest
from allinone.core.api.commands import CommandBody
from allinone.core.api.devices import Device, IssuedDevice
from allinone.core.api.environments import EnvironmentCreate, EnvironmentFileCreate
from allinone.core.api.forks import ForkBody, Rewind, RewindBody
from allinone.core.api.overlays import OverlayBody
from allinone.core.api.subagents import Subagent
from allinone.core.api.traces import SessionTrace
from allinone.core.shapes import agent_resources as agents
from allinone.core.shapes import automation_models as automations
from allinone.core.shapes import skill_models as skills
from allinone.core.shapes import template_models as templates
from allinone.core.shapes import vault_models as vaults
from allinone.core.shapes.models import (
    AgentCreate,
    AgentUpdate,
    InputEvents,
    SessionCreate,
    SessionUpdate,
)

CURSOR = ("after", "limit", "order")
SESSION = "/v1/agents/sessions/{session_id}"
SUBAGENT = SESSION + "/subagents/{subagent_id}"
AUTOMATION = "/v1/agents/automations/{automation_id}"
TEMPLATES = "/v1/agents/environments/templates"
VAULT = "/v1/vaults/{vault_id}"
CREDENTIAL = VAULT + "/credentials/{credential_id}"
PROJECT = "/core/v1/projects/{project_id}"
SKILL = "/v1/skills/{skill_id}"
SKILL_VERSION = SKILL + "/versions/{version}"
AGENT_X = "/x/v1/agents/{agent_id}"
DEVICE = "/core/v1/devices/{device_id}"
# An agent version's number, or its id (`agent_...@3`).
VERSION_NUMBER = {"type": "string", "pattern": "^(.*@)?0*[1-9][0-9]{0,18}$"}


@dataclass(frozen=True)
class Operation:
    """One route. `response` is a msgspec type, the name of a hand-written schema, or
    None (no JSON body); `page` wraps it in the list envelope; `body` is the msgspec type
    of the JSON request body; `status` is the success code and `also` any other one that
    answers the same shape (an idempotent replay's 200); `extra["query"]` overrides the
    schema of a query parameter for this route alone, `extra["path"]` that of a path
    parameter. `body_limits` describes the request body's size limits."""

    method: str
    path: str
    summary: str
    response: Any = None
    page: bool = False
    body: Any = None
    query: tuple[str, ...] = ()
    status: int = 200
    also: tuple[int, ...] = ()
    content_type: str = "application/json"
    auth: str = "project"
    extra: dict[str, Any] = field(default_factory=dict)
    body_limits: str = ""


Op = Operation
# The size limits of the routes that carry session input (README, "Slow or oversized
# requests"; `allinone.core.sessions.wire`).
_INPUT = (
    "The input, as the Runtime receives it (its messages as JSON), may be at most 512 KiB"
    " (524288 bytes), and so may the input a session's turn holds and has not yet taken;"
    " past it the request is refused with 400 `input_too_large`, naming the input."
)
SESSION_INPUT_LIMITS = "At most 16 MiB in all (else 413 `request_too_large`). " + _INPUT
EVENTS_INPUT_LIMITS = "At most 1 MiB in all (else 413 `request_too_large`). " + _INPUT
AUTOMATION_LIMITS = (
    "At most 16 MiB in all (else 413 `request_too_large`). The target's `input` (or"
    " `instructions`), as the Runtime will receive it, may be at most 512 KiB (524288"
    " bytes); past it the request is refused with 400 `input_too_large`."
)
_ROUTES: tuple[Operation, ...] = (
    Op("POST", "/v1/agents", "Create an agent", agents.Agent, body=AgentCreate),
    Op("GET", "/v1/agents", "List agents", agents.Agent, page=True, query=CURSOR),
    Op("GET", "/v1/agents/{agent_id}", "Retrieve an agent", agents.Agent),
    Op("POST", "/v1/agents/{agent_id}", "Update an agent", agents.Agent, body=AgentUpdate),
    Op("DELETE", "/v1/agents/{agent_id}", "Delete an agent", agents.AgentDeleted),
    Op(
        "POST",
        "/v1/agents/sessions",
        "Create a session (SSE when stream is true)",
        "AgentSession",
        body=SessionCreate,
        body_limits=SESSION_INPUT_LIMITS,
    ),
    Op(
        "GET",
        "/v1/agents/sessions",
        "List sessions",
        "AgentSession",
        page=True,
        query=(*CURSOR, "agent_id", "metadata"),
    ),
    Op("GET", SESSION, "Retrieve a session", "AgentSession"),
    Op("POST", SESSION, "Update a session", "AgentSession", body=SessionUpdate),
    Op("DELETE", SESSION, "Delete a session", "AgentSessionDeleted"),
    Op(
        "GET",
        SESSION + "/events",
        "Stream session events",
        "AgentSessionEvent",
        content_type="text/event-stream",
        query=("include_obfuscation",),
    ),
    Op(
        "POST",
        SESSION + "/events",
        "Send session input",
        None,
        body=InputEvents,
        status=202,
        body_limits=EVENTS_INPUT_LIMITS,
    ),
    Op(
        "GET", SESSION + "/items", "List session items", "AgentSessionItem", page=True, query=CURSOR
    ),
    Op("GET", SESSION + "/turns", "List turns", "Turn", page=True, query=CURSOR),
    Op("GET", SESSION + "/turns/{turn_id}", "Retrieve a turn", "Turn"),
    Op(
        "GET",
        SESSION + "/turns/{turn_id}/items",
        "List a turn's items",
        "AgentSessionItem",
        page=True,
        query=CURSOR,
    ),
    Op("GET", SESSION + "/traces", "List session traces", SessionTrace, page=True, query=CURSOR),
    Op("GET", SESSION + "/subagents", "List subagents", Subagent, page=True, query=CURSOR),
    Op("GET", SUBAGENT, "Retrieve a subagent", Subagent),
    Op(
        "GET",
        SUBAGENT + "/items",
        "List a subagent's items",
        "AgentSessionItem",
        page=True,
        query=CURSOR,
    ),
    Op("GET", SUBAGENT + "/turns", "List a subagent's turns", "Turn", page=True, query=CURSOR),
    Op("GET", SUBAGENT + "/turns/{turn_id}", "Retrieve a subagent turn", "Turn"),
    Op(
        "GET",
        SUBAGENT + "/turns/{turn_id}/items",
        "List a subagent turn's items",
        "AgentSessionItem",
        page=True,
        query=CURSOR,
    ),
    Op(
        "GET",
        SESSION + "/artifacts",
        "List artifacts",
        "SessionArtifact",
        page=True,
        query=(*CURSOR, "environment_id"),
    ),
    Op("GET", SESSION + "/artifacts/{artifact_id}", "Retrieve an artifact", "SessionArtifact"),
    Op(
        "DELETE",
        SESSION + "/artifacts/{artifact_id}",
        "Delete an artifact",
        "SessionArtifactDeleted",
    ),
    Op(
        "GET",
        SESSION + "/artifacts/{artifact_id}/content",
        "Download an artifact",
        None,
        content_type="application/octet-stream",
    ),
    Op(
        "POST",
        "/v1/agents/environments",
        "Create an environment",
        "EnvironmentInfo",
        body=EnvironmentCreate,
    ),
    Op(
        "GET",
        "/v1/agents/environments",
        "List environments",
        "EnvironmentInfo",
        page=True,
        query=(*CURSOR, "type"),
    ),
    Op(
        "GET",
        "/v1/agents/environments/{environment_id}",
        "Retrieve an environment",
        "EnvironmentInfo",
    ),
    Op(
        "POST",
        "/v1/agents/environments/{environment_id}/files",
        "Stage a file",
        "EnvironmentFile",
        body=EnvironmentFileCreate,
    ),
    Op("POST", "/v1/files", "Upload a file (multipart, purpose=user_data)", "FileObject"),
    Op(
        "GET",
        "/v1/files",
        "List files",
        "FileObject",
        page=True,
        query=(*CURSOR, "purpose"),
        # The Files API's own bounds: `limit` 1-10,000, default 10,000.
        extra={"query": {"limit": {"type": "integer", "minimum": 1, "maximum": 10_000}}},
    ),
    Op("GET", "/v1/files/{file_id}", "Retrieve a file", "FileObject"),
    Op("DELETE", "/v1/files/{file_id}", "Delete a file", "FileDeleted"),
    Op(
        "GET",
        "/v1/files/{file_id}/content",
        "Download a file's content",
        None,
        content_type="application/octet-stream",
    ),
    Op(
        "GET",
        "/v1/agents/environments/{environment_id}/files",
        "List files",
        "EnvironmentFilePage",
        query=("limit", "order", "page", "path"),
    ),
    Op(
        "POST",
        TEMPLATES,
        "Create a template",
        templates.EnvironmentTemplate,
        body=templates.TemplateBody,
    ),
    Op("GET", TEMPLATES, "List templates", templates.EnvironmentTemplate, page=True, query=CURSOR),
    Op("GET", TEMPLATES + "/{template_id}", "Retrieve a template", templates.EnvironmentTemplate),
    Op(
        "POST",
        TEMPLATES + "/{template_id}",
        "Update a template",
        templates.EnvironmentTemplate,
        body=templates.TemplateBody,
    ),
    Op(
        "DELETE",
        TEMPLATES + "/{template_id}",
        "Delete a template",
        templates.EnvironmentTemplateDeleted,
    ),
    Op(
        "POST",
        "/v1/agents/automations",
        "Create an automation",
        automations.Automation,
        body=automations.AutomationCreate,
        body_limits=AUTOMATION_LIMITS,
    ),
    Op(
        "GET",
        "/v1/agents/automations",
        "List automations",
        automations.Automation,
        page=True,
        query=(*CURSOR, "session_id"),
    ),
    Op("GET", AUTOMATION, "Retrieve an automation", automations.Automation),
    Op(
        "POST",
        AUTOMATION,
        "Update an automation",
        automations.Automation,
        body=automations.AutomationUpdate,
        body_limits=AUTOMATION_LIMITS,
    ),
    Op("DELETE", AUTOMATION, "Delete an automation", automations.AutomationDeleted),
    Op("POST", AUTOMATION + "/pause", "Pause an automation", automations.Automation),
    Op("POST", AUTOMATION + "/resume", "Resume an automation", automations.Automation),
    Op(
        "POST",
        AUTOMATION + "/invocations",
        "Invoke an automation now",
        automations.AutomationInvocation,
    ),
    Op(
        "GET",
        AUTOMATION + "/invocations",
        "List invocations",
        automations.AutomationInvocation,
        page=True,
        query=CURSOR,
    ),
    Op(
        "GET",
        AUTOMATION + "/invocations/{invocation_id}",
        "Retrieve an invocation",
        automations.AutomationInvocation,
    ),
    Op("POST", "/v1/vaults", "Create a vault", vaults.Vault, body=vaults.VaultCreate),
    Op(
        "GET",
        "/v1/vaults",
        "List vaults",
        vaults.Vault,
        page=True,
        query=(*CURSOR, "metadata", "status"),
    ),
    Op("GET", VAULT, "Retrieve a vault", vaults.Vault),
    Op("POST", VAULT, "Update a vault", vaults.Vault, body=vaults.VaultUpdate),
    Op("DELETE", VAULT, "Delete a vault", vaults.VaultDeleted),
    Op(
        "POST",
        VAULT + "/credentials",
        "Create a credential",
        vaults.Credential,
        body=vaults.CredentialCreate,
    ),
    Op(
        "GET",
        VAULT + "/credentials",
        "List credentials",
        vaults.Credential,
        page=True,
        query=(*CURSOR, "metadata", "status"),
    ),
    Op("GET", CREDENTIAL, "Retrieve a credential", vaults.Credential),
    Op(
        "POST",
        CREDENTIAL,
        "Update or rotate a credential",
        vaults.Credential,
        body=vaults.CredentialUpdate,
    ),
    Op("DELETE", CREDENTIAL, "Delete a credential", vaults.CredentialDeleted),
    Op(
        "POST",
        "/core/v1/projects",
        "Create a project",
        projects.Project,
        body=projects.ProjectCreate,
        auth="core",
    ),
    Op(
        "GET",
        "/core/v1/projects",
        "List projects",
        projects.Project,
        page=True,
        query=CURSOR,
        auth="core",
    ),
    Op("GET", PROJECT, "Retrieve a project", projects.Project, auth="core"),
    Op(
        "POST",
        PROJECT + "/archive",
        "Archive a project and revoke its keys",
        projects.Project,
        auth="core",
    ),
    Op(
        "POST",
        PROJECT + "/api_keys",
        "Issue a project API key (shown once)",
        projects.IssuedApiKey,
        body=projects.ApiKeyCreate,
        auth="core",
    ),
    Op(
        "GET",
        PROJECT + "/api_keys",
        "List a project's API keys",
        projects.ApiKey,
        page=True,
        query=CURSOR,
        auth="core",
    ),
    Op(
        "POST",
        PROJECT + "/api_keys/{key_id}/revoke",
        "Revoke one API key",
        projects.ApiKey,
        auth="core",
    ),
    Op(
        "GET",
        PROJECT + "/host_grants",
        "What the project may make the in-process Runtime touch on the host",
        projects.HostGrants,
        auth="core",
    ),
    Op(
        "POST",
        PROJECT + "/host_grants/workspace_roots",
        "Grant a host directory for the project's self_hosted workspaces",
        projects.HostGrants,
        body=projects.WorkspaceRootChange,
        auth="core",
    ),
    Op(
        "POST",
        PROJECT + "/host_grants/workspace_roots/revoke",
        "Revoke a granted host directory",
        projects.HostGrants,
        body=projects.WorkspaceRootChange,
        auth="core",
    ),
    Op(
        "POST",
        PROJECT + "/host_grants/trust",
        "Trust (or stop trusting) the project to run unconfined commands",
        projects.HostGrants,
        body=projects.TrustChange,
        auth="core",
    ),
    Op("POST", "/v1/skills", "Create a skill (multipart upload)", skills.Skill),
    Op("GET", "/v1/skills", "List skills", skills.Skill, page=True, query=CURSOR),
    Op("GET", SKILL, "Retrieve a skill", skills.Skill),
    Op("POST", SKILL, "Set a skill's default version", skills.Skill, body=skills.SkillUpdate),
    Op("DELETE", SKILL, "Delete a skill and its versions", skills.DeletedSkill),
    Op(
        "GET",
        SKILL + "/content",
        "Download the default version's bundle (zip)",
        None,
        content_type="application/zip",
    ),
    Op("POST", SKILL + "/versions", "Create a skill version (multipart)", skills.SkillVersion),
    Op(
        "GET",
        SKILL + "/versions",
        "List a skill's versions",
        skills.SkillVersion,
        page=True,
        query=CURSOR,
    ),
    Op("GET", SKILL_VERSION, "Retrieve a skill version", skills.SkillVersion),
    Op("DELETE", SKILL_VERSION, "Delete a skill version", skills.DeletedSkillVersion),
    Op(
        "GET",
        SKILL_VERSION + "/content",
        "Download a version's bundle (zip)",
        None,
        content_type="application/zip",
    ),
    Op(
        "GET",
        "/core/v1/harnesses",
        "List the harnesses connected Runtimes declare, with their capability matrix",
        auth="core",
    ),
    Op(
        "POST",
        "/x/v1/sessions/{session_id}/fork",
        "Fork a session into a new one at a finished turn (or item)",
        "AgentSession",
        body=ForkBody,
    ),
    Op(
        "POST",
        "/x/v1/sessions/{session_id}/rewind",
        "Hide a session's last turns from the model's context (history stays)",
        Rewind,
        body=RewindBody,
    ),
)

# Run control, versions and deployments, safety overlays, devices and drain: routes whose
# answers are not the default 200 or whose shapes the document states by name.
_CONTROL: tuple[Operation, ...] = (
    Op(
        "POST",
        "/x/v1/sessions/{session_id}/commands",
        "Ask to pause, resume or cancel a session's turn (200 on an idempotent replay)",
        "Command",
        body=CommandBody,
        status=202,
        also=(200,),
    ),
    Op(
        "GET",
        "/x/v1/sessions/{session_id}/commands",
        "List a session's commands, oldest first",
        "Command",
        page=True,
        query=("after", "limit"),
    ),
    Op("GET", "/x/v1/commands/{command_id}", "Retrieve a command", "Command"),
    Op(
        "GET",
        AGENT_X + "/versions",
        "List an agent's versions",
        "AgentVersion",
        page=True,
        query=CURSOR,
        extra={"query": {"after": VERSION_NUMBER}},
    ),
    Op(
        "GET",
        AGENT_X + "/versions/{number}",
        "Retrieve an agent version",
        "AgentVersion",
        extra={"path": {"number": VERSION_NUMBER}},
    ),
    Op("GET", AGENT_X + "/deployments", "List an agent's deployments", "Deployment", page=True),
    Op(
        "GET",
        AGENT_X + "/audit",
        "List an agent's version writes and pointer moves, newest first",
        "AgentAudit",
        page=True,
        query=("limit",),
    ),
    Op(
        "POST",
        AGENT_X + "/deployments/{name}/promote",
        "Point a deployment at a version",
        "Deployment",
        body=PromoteBody,
    ),
    Op(
        "POST",
        AGENT_X + "/deployments/{name}/rollback",
        "Point a deployment back at an earlier version",
        "Deployment",
        body=RollbackBody,
    ),
    Op(
        "GET",
        "/core/v1/overlays",
        "List the active safety overlays (all=true: every one ever set)",
        "Overlay",
        page=True,
        query=("all",),
        auth="core",
        extra={"query": {"all": {"type": "boolean"}}},
    ),
    Op(
        "POST",
        "/core/v1/overlays",
        "Set a safety overlay",
        "Overlay",
        body=OverlayBody,
        auth="core",
    ),
    Op(
        "DELETE",
        "/core/v1/overlays/{overlay_id}",
        "Clear a safety overlay (resume=true: a pause kill switch also resumes the turns it"
        " paused, listed under resumed)",
        "Overlay",
        query=("resume",),
        auth="core",
        extra={"query": {"resume": {"type": "boolean"}}},
    ),
    Op("POST", "/core/v1/devices", "Register a device", IssuedDevice, status=201, auth="core"),
    Op("GET", "/core/v1/devices", "List devices", Device, page=True, query=CURSOR, auth="core"),
    Op("GET", DEVICE, "Retrieve a device", Device, auth="core"),
    Op("DELETE", DEVICE, "Revoke a device", Device, auth="core"),
    Op(
        "POST",
        DEVICE + "/shutdown",
        "Ask a device's Runtime to stop",
        Device,
        status=202,
        auth="core",
    ),
    Op(
        "POST",
        "/core/v1/drain",
        "Drain: finish or checkpoint work, claim no more",
        "Drain",
        status=202,
        auth="core",
    ),
)
CONTACT = "/api/v1/contacts/{contact_id}"
ROLES = "/core/v1/comms/roles"
ROLE = ROLES + "/{role_id}"
COMMUNICATION = "/api/v1/communication"
INSTANCE_CONTACTS = "/core/v1/comms/instances/{instance_id}/contacts"
# The messaging platform (protocol 1.4): who calls (an instance with its runtime token,
# or the owner with a project key), method, path, what the route does and the schema of
# its answer (`schemas.COMMS`).
_MESSAGING: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "instance",
        "GET",
        "/api/v1/me",
        "The calling instance, its role and primary epoch",
        "CommsMe",
    ),
    ("instance", "POST", "/api/v1/contacts", "Open a contact with another role", "CommsMessage"),
    (
        "instance",
        "GET",
        CONTACT + "/communication",
        "Read a contact and its messages",
        "CommsCommunication",
    ),
    ("instance", "POST", CONTACT + "/reply", "Reply on a contact", "CommsMessage"),
    (
        "instance",
        "POST",
        CONTACT + "/accept",
        "Accept a contact, lifting its reply limit",
        "CommsCommunication",
    ),
    (
        "instance",
        "POST",
        CONTACT + "/close",
        "Close a contact (either party)",
        "CommsCommunication",
    ),
    ("instance", "POST", CONTACT + "/claim", "Claim a contact's task under a lease", "CommsClaim"),
    (
        "instance",
        "POST",
        CONTACT + "/progress",
        "Report the phase a claimed task reached",
        "CommsClaim",
    ),
    (
        "instance",
        "POST",
        COMMUNICATION + "/receipts",
        "Confirm events as persisted",
        "CommsReceipts",
    ),
    (
        "instance",
        "GET",
        COMMUNICATION + "/receiver",
        "The receiver as last reported, if fresh",
        "CommsReceiver",
    ),
    (
        "instance",
        "PUT",
        COMMUNICATION + "/receiver",
        "Report the instance's own receiver",
        "CommsReceiver",
    ),
    ("project", "POST", ROLES, "Create a messaging role", "CommsRole"),
    ("project", "GET", ROLES, "List messaging roles", "CommsRoleList"),
    ("project", "GET", ROLE, "Retrieve a messaging role", "CommsRole"),
    (
        "project",
        "POST",
        ROLE + "/instances",
        "Create an instance of a role (its runtime token is shown once)",
        "CommsInstance",
    ),
    ("project", "GET", ROLE + "/instances", "List a role's instances", "CommsInstanceList"),
    (
        "project",
        "POST",
        ROLE + "/primary",
        "Switch the role's primary (compare-and-set)",
        "CommsRole",
    ),
    ("project", "POST", ROLE + "/rotate-stream", "Start a role's new event stream", "CommsRole"),
    (
        "project",
        "GET",
        "/core/v1/comms/contacts",
        "List the project's contacts",
        "CommsContactList",
    ),
    (
        "project",
        "GET",
        "/core/v1/comms/contacts/{contact_id}",
        "Read a contact's conversation",
        "CommsConversation",
    ),
    ("project", "POST", INSTANCE_CONTACTS, "Open a contact for an instance", "CommsMessage"),
    (
        "project",
        "POST",
        INSTANCE_CONTACTS + "/{contact_id}/close",
        "Close an instance's contact",
        "CommsCommunication",
    ),
)
# The server's own routes: health, the archive lifecycle, the cluster, harnesses,
# bundles, the device bootstrap, and the messaging platform's.
_PLATFORM: tuple[Operation, ...] = (
    Op("GET", "/healthz", "Whether the process is alive", "Health", auth="optional"),
    Op(
        "GET",
        "/readyz",
        "Whether the server is ready, with the evidence for each check (503 when not)",
        "Readiness",
        also=(503,),
        auth="optional",
    ),
    *(
        Op(
            "POST",
            f"/x/v1/{table}/{{resource_id}}/{change}",
            f"{change.capitalize()} {'an' if kind[0] in 'aeiou' else 'a'} {kind}",
            "Archive",
        )
        for table, kind in archive.KINDS.items()  # as the archive routes are made
        for change in ("archive", "unarchive")
    ),
    Op(
        "GET",
        "/core/v1/cluster",
        "List the Core processes sharing this database",
        "Cluster",
        auth="core",
    ),
    Op(
        "GET",
        "/core/v1/harnesses",
        "List the harnesses connected Runtimes declare, with their capability matrix",
        "HarnessList",
        auth="project_or_core",
    ),
    Op(
        "POST",
        "/core/v1/export",
        "Export a project's agents and sessions (or the named ones) as a bundle",
        "Bundle",
        body=ExportRequest,
        auth="core",
    ),
    Op(
        "POST",
        "/core/v1/import",
        "Import a bundle into a project (rows already there are left as they are)",
        "Import",
        body="Bundle",
        query=("project_id",),
        auth="core",
        extra={"query": {"project_id": {"type": "string", "minLength": 1}}},
    ),
    Op(
        "POST",
        "/api/v1/agent-daemon/bootstrap",
        "Exchange a device credential for where its Runtime connects",
        "Bootstrap",
        auth="device",
    ),
    *(
        Op(method, path, summary, answer, auth=auth)
        for auth, method, path, summary, answer in _MESSAGING
    ),
    Op(
        "GET",
        COMMUNICATION + "/events",
        "Read the instance's communication events after a sequence",
        "CommsEvents",
        query=("after", "limit", "stream_id"),
        auth="instance",
        extra={"query": {"after": {"type": "integer", "minimum": 0}}},
    ),
)
OPERATIONS: tuple[Operation, ...] = _ROUTES + _CONTROL + _PLATFORM
