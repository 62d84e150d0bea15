"""Environment template configuration: validation, defaults and the split into what may be
shown and what is confidential.

`merge(body, public, confidential)` applies a create or update body (omitted keeps,
null resets to the default) and returns the new `(name, public, confidential)`. The
public part is exactly the returned resource's configuration; the confidential part
(environment variables, setup commands, inline file data, capability sources) is only
ever stored sealed.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core.errors import InvalidRequest
from allinone.core.shapes import template_models as m
from allinone.core.skills.bundles import normalise
from allinone.core.workspace_paths import check_size

DEFAULT_NETWORK: dict[str, Any] = {"access": "disabled", "allowed_domains": []}
WORKSPACE = "/workspace"
RESERVED_PREFIXES = ("/workspace/.codex", "/workspace/.managed-agents", "/workspace/.skills")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PUBLIC_FIELDS = (
    "capability_directories",
    "desktop",
    "files",
    "network",
    "packages",
    "plugins",
    "skills",
)


def empty() -> tuple[dict[str, Any], dict[str, Any]]:
    """The public and confidential parts of a template with every default."""
    public: dict[str, Any] = {
        "capability_directories": [],
        "files": [],
        "network": dict(DEFAULT_NETWORK),
        "packages": {"npm": [], "python": [], "system": []},
        "plugins": [],
        "skills": [],
        "desktop": None,
    }
    confidential: dict[str, Any] = {
        "env": {},
        "setup_commands": [],
        "files": [],
        "plugins": [],
        "skills": [],
    }
    return public, confidential


def merge(
    body: m.TemplateBody, public: dict[str, Any], confidential: dict[str, Any], name: str | None
) -> tuple[str | None, dict[str, Any], dict[str, Any]]:
    public, confidential = dict(public), dict(confidential)
    if body.name is not UNSET:
        name = body.name
    if body.capability_directories is not UNSET:
        dirs = body.capability_directories or []
        for index, directory in enumerate(dirs):
            if not directory.startswith("/"):
                raise InvalidRequest(
                    "Capability directories must be absolute paths.",
                    f"capability_directories[{index}]",
                )
        public["capability_directories"] = list(dirs)
    if body.desktop is not UNSET:
        public["desktop"] = None if body.desktop is None else {"enabled": body.desktop.enabled}
    if body.env is not UNSET:
        confidential["env"] = _env(body.env or {})
    if body.files is not UNSET:
        files = body.files or []
        public["files"] = [_file(f, f"files[{i}]") for i, f in enumerate(files)]
        confidential["files"] = msgspec.to_builtins(files)
    if body.network is not UNSET:
        public["network"] = (
            dict(DEFAULT_NETWORK) if body.network is None else _network(body.network)
        )
    if body.packages is not UNSET:
        packages = body.packages
        public["packages"] = {
            kind: list(getattr(packages, kind) or []) if packages is not None else []
            for kind in ("npm", "python", "system")
        }
    if body.plugins is not UNSET:
        plugins = body.plugins or []
        for index, plugin in enumerate(plugins):
            _base64(plugin.source.data, f"plugins[{index}].source.data")
        public["plugins"] = [
            {"type": "inline", "name": p.name, "description": p.description} for p in plugins
        ]
        confidential["plugins"] = msgspec.to_builtins(plugins)
    if body.setup_commands is not UNSET:
        commands = body.setup_commands or []
        for index, command in enumerate(commands):
            if not command.command.strip():
                raise InvalidRequest(
                    "A setup command must not be empty.", f"setup_commands[{index}]"
                )
        confidential["setup_commands"] = msgspec.to_builtins(commands)
    if body.skills is not UNSET:
        skills = body.skills or []
        public["skills"] = [_skill(s, f"skills[{i}]") for i, s in enumerate(skills)]
        confidential["skills"] = msgspec.to_builtins(skills)
    return name, public, confidential


def template_body(environment: Any) -> m.TemplateBody:
    """The template fields of a hosted environment request (anything with the same
    attribute names), so an inline configuration is validated like a template."""
    names = [name for name in m.TemplateBody.__struct_fields__ if name != "name"]
    return m.TemplateBody(**{name: getattr(environment, name) for name in names})


def check_path(path: str, param: str) -> str:
    """An absolute POSIX path under /workspace/ without `.`, `..` or empty segments,
    outside the reserved subtrees, that a file system can hold."""
    segments = path.split("/")
    if (
        not path.startswith(WORKSPACE + "/")
        or any(s in ("", ".", "..") for s in segments[1:])
        or path == WORKSPACE + "/outputs"
        or any(path == p or path.startswith(p + "/") for p in RESERVED_PREFIXES)
        or path.startswith("/workspace/.managed-agents-")
    ):
        raise InvalidRequest("path must be an absolute, unreserved path under /workspace/.", param)
    check_size(path, param)
    return path


def _file(file: m.FileIdFileParam | m.InlineFileParam, param: str) -> dict[str, Any]:
    path = check_path(file.path, f"{param}.path")
    if isinstance(file, m.FileIdFileParam):
        return {"type": "file_id", "file_id": file.file_id, "path": path}
    size = len(_base64(file.data, f"{param}.data"))
    return {"type": "inline", "path": path, "size_bytes": size}


def _skill(skill: m.SkillReferenceParam | m.InlineSkillParam, param: str) -> dict[str, Any]:
    if isinstance(skill, m.SkillReferenceParam):
        version = None if skill.version is UNSET else skill.version
        return {"type": "skill_reference", "skill_id": skill.skill_id, "version": version}
    where = f"{param}.source.data"
    bundle = normalise([("skill.zip", _base64(skill.source.data, where))], where)
    if bundle.name != skill.name:
        raise InvalidRequest("name must match the name in the skill's SKILL.md.", f"{param}.name")
    return {"type": "inline", "name": skill.name, "description": skill.description}


def _network(network: m.NetworkParam) -> dict[str, Any]:
    allowed = list(network.allowed_domains or [])
    blocked = list(network.blocked_domains or [])
    if (allowed or blocked) and network.access != "restricted":
        raise InvalidRequest("Domain lists require network access `restricted`.", "network.access")
    if allowed and blocked:
        raise InvalidRequest(
            "blocked_domains cannot be combined with allowed_domains.", "network.blocked_domains"
        )
    for field, domains in (("allowed_domains", allowed), ("blocked_domains", blocked)):
        for index, domain in enumerate(domains):
            if "*" in domain or "/" in domain or not domain.strip():
                raise InvalidRequest("Domains are plain host names.", f"network.{field}[{index}]")
    return {"access": network.access, "allowed_domains": allowed}


def _env(env: dict[str, str]) -> dict[str, str]:
    for key in env:
        if not ENV_NAME.match(key):
            raise InvalidRequest(
                "Environment variable names are letters, digits and _.", f"env.{key}"
            )
    return dict(env)


def _base64(data: str, param: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise InvalidRequest("data must be standard base64.", param) from exc
