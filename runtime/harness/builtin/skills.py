"""The instructions paragraph that tells the model which skills its workspace holds.

Each skill installed by the environment lives at `/workspace/.skills/<name>/` with a
`SKILL.md`; the model sees each name and description and opens the files it needs with
its workspace tools (paths relative to the workspace: `.skills/<name>/SKILL.md`).
"""

from __future__ import annotations

from runtime.proto.execution import ExecutionConfiguration


def skills_paragraph(configuration: ExecutionConfiguration) -> str:
    """The paragraph to add to the system prompt; empty when no skill is installed."""
    local = configuration.local_environment
    sources = local.capability_sources if local else None
    if sources is None or not sources.skills:
        return ""
    lines = [
        "Skills are installed in your workspace. Each is a folder with a SKILL.md that"
        " explains when and how to use it; read a skill's SKILL.md with your workspace"
        " tools before you use it.",
    ]
    for skill in sources.skills:
        description = " ".join(skill.description.split())
        lines.append(f"- {skill.name} (.skills/{skill.name}/SKILL.md): {description}")
    return "\n".join(lines)


def with_skills(system_prompt: str, configuration: ExecutionConfiguration) -> str:
    paragraph = skills_paragraph(configuration)
    if not paragraph:
        return system_prompt
    return f"{system_prompt}\n\n{paragraph}" if system_prompt else paragraph
