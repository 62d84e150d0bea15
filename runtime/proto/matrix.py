"""The capability matrix (seed 003, "the model adapter must not flatten the semantics").

For each harness kind and the model protocol it speaks, every public feature is labelled
`supported`, `degraded`, `emulated`, `unsupported` or `lossy`, with a note saying what
the label means there. It is a shared, sans-I/O table: the Runtime's adapters are
written to it and Core reads it at admission, where a request that needs an
`unsupported` feature is refused before any work and every other label below
`supported` is recorded on the session, so no conversion is silent.

Capability declarations (capabilities.py) say what a Runtime can execute; this table
says how faithfully each public feature survives the trip through a harness and model
protocol. Adding a feature means deciding its label in every profile: `profile` raises
for a profile that leaves one out.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class Support(StrEnum):
    SUPPORTED = "supported"
    DEGRADED = "degraded"  # works, with less than the full contract (the note says what)
    EMULATED = "emulated"  # provided by corebox around a harness or model that lacks it
    UNSUPPORTED = "unsupported"  # requests that need it are refused at admission
    LOSSY = "lossy"  # accepted, but part of the request's meaning is dropped (flagged)


class FeatureSupport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    support: Support
    note: str


# Every feature, with what a request does to need it.
FEATURES: dict[str, str] = {
    "streaming": "text arrives as deltas while the model writes",
    "function_tools": "the agent declares function tools (client-executed)",
    "parallel_tool_calls": "the model asks for several tool calls at once",
    "structured_output": "text.format is json_schema",
    "text_verbosity": "text.verbosity is low or high",
    "reasoning_effort": "reasoning.effort is set",
    "reasoning_summaries": "the model's reasoning is shown as reasoning items",
    "usage": "token usage is reported on turns",
    "steering": "a message sent during a turn joins it",
    "cancellation": "a running turn can be cancelled",
    "permissions": "the harness asks before acting (mcp_approval_request)",
    "user_choices": "the harness asks the user to choose (x_corebox_user_choice)",
    "mcp_http_tools": "the agent declares an MCP server over HTTP",
    "mcp_stdio_tools": "the agent declares an MCP server over stdio",
    "web_search": "the agent declares web_search",
    "computer_use": "the agent declares computer_use",
    "tool_search": "the agent declares tool_search or a deferred function",
    "programmatic_tool_calling": "the agent enables programmatic_tool_calling",
    "automations": "the agent declares the automations tool",
    "subagents": "multi_agent.enabled is true",
    "message_images": "an input message carries an image",
    "function_result_images": "a function result carries an image",
    "workspace_tools": "the agent reads, writes and runs commands in a workspace",
    "conversation_memory": "later turns see the earlier turns of the session",
    "service_tier": "service_tier is other than auto",
}

S, D, E, U, L = (
    Support.SUPPORTED,
    Support.DEGRADED,
    Support.EMULATED,
    Support.UNSUPPORTED,
    Support.LOSSY,
)


def _row(**features: tuple[Support, str]) -> dict[str, FeatureSupport]:
    return {name: FeatureSupport(level, note) for name, (level, note) in features.items()}


_NEVER = {
    "mcp_stdio_tools": (U, "corebox runs no MCP servers as local processes"),
    "web_search": (U, "no harness has a web search tool"),
    "computer_use": (U, "no harness has a computer"),
    "tool_search": (U, "every function is loaded up front; nothing can be deferred"),
    "programmatic_tool_calling": (U, "programmatic tool calling is always disabled"),
    "automations": (U, "agents cannot create automations"),
    "function_result_images": (U, "function results are text"),
    "service_tier": (L, "the service tier is not sent to the model; it is ignored"),
}

_SCRIPTED = _row(
    streaming=(S, "replies stream in deltas of at most 16 characters"),
    function_tools=(S, "/call emits a function call and waits for its result"),
    parallel_tool_calls=(U, "one /call at a time"),
    structured_output=(U, "the scripted harness writes what it is told, never to a schema"),
    text_verbosity=(L, "ignored: replies are the scripted text"),
    reasoning_effort=(L, "ignored: there is no model"),
    reasoning_summaries=(E, "/think emits a reasoning item with the given text"),
    usage=(E, "word counts labelled scripted-word-count, or /usage figures"),
    steering=(S, "steered lines run after the current directive"),
    cancellation=(S, "every wait is interruptible"),
    permissions=(E, "/permission asks for approval"),
    user_choices=(E, "/choose asks a question"),
    mcp_http_tools=(U, "the scripted harness calls no MCP servers"),
    message_images=(L, "images are ignored; only text parts are read"),
    workspace_tools=(E, "/command and /write stand in for real tools"),
    conversation_memory=(U, "each turn reads only its own input"),
    subagents=(E, "/subagent TEXT opens a subagent that replies with TEXT and closes"),
    **_NEVER,
)

_BUILTIN_COMMON = {
    "streaming": (S, "text deltas as the model writes them"),
    "function_tools": (S, "each call becomes a function_call and waits for its result"),
    "parallel_tool_calls": (D, "several calls in one model reply run one after another"),
    "steering": (E, "steered input is added before the next model call, not mid-reply"),
    "cancellation": (S, "the model stream is closed and the turn settles"),
    "permissions": (S, "workspace commands ask first unless the tool policy allows them"),
    "user_choices": (U, "the model has no way to ask a multiple-choice question"),
    "mcp_http_tools": (
        E,
        "corebox is the MCP client: tools are offered to the model as functions and "
        "results are passed back as text",
    ),
    "message_images": (S, "images are sent as image parts"),
    "subagents": (
        D,
        "the model delegates with a create_subagent tool: each subagent runs one model "
        "loop on its task, without tools, and its reply is the tool's result",
    ),
    "workspace_tools": (
        S,
        "read, write and list files and run commands in the bound workspace; commands "
        "ask first unless the tool policy allows them",
    ),
    "conversation_memory": (
        D,
        "kept in the session's Executor and rebuilt from Core's committed items when the "
        "Executor is new (restart, eviction, configuration change): messages and function "
        "calls with their results; reasoning, command and MCP tool items are not carried",
    ),
}

_CHAT = _row(
    **_BUILTIN_COMMON,
    structured_output=(S, "sent as response_format json_schema"),
    text_verbosity=(L, "chat completions has no portable verbosity control; not sent"),
    reasoning_effort=(D, "sent as reasoning_effort; many compatible servers ignore it"),
    reasoning_summaries=(
        D,
        "reasoning text the server streams (reasoning_content or reasoning) is shown; "
        "there are no summaries",
    ),
    usage=(D, "requested with include_usage; absent when the server does not report it"),
    **_NEVER,
)

_RESPONSES = _row(
    **_BUILTIN_COMMON,
    structured_output=(S, "sent as text.format json_schema"),
    text_verbosity=(S, "sent as text.verbosity"),
    reasoning_effort=(S, "sent as reasoning.effort"),
    reasoning_summaries=(S, "reasoning summaries stream as reasoning items"),
    usage=(S, "from the response's usage counters"),
    **_NEVER,
)

# The Codex CLI over the responses wire API (it has no other).
_CODEX = _row(
    streaming=(S, "the CLI's agent message deltas"),
    function_tools=(U, "the CLI runs its own tools; client-executed functions cannot be added"),
    parallel_tool_calls=(S, "the CLI's own tool loop"),
    structured_output=(U, "the app-server protocol has no output schema for a turn"),
    text_verbosity=(L, "not sent: the CLI has no per-turn verbosity"),
    reasoning_effort=(S, "sent as the turn's effort"),
    reasoning_summaries=(S, "the CLI's reasoning items"),
    usage=(S, "the CLI's per-request token counts, summed over the turn"),
    steering=(S, "passed to the running native turn (turn/steer)"),
    cancellation=(S, "turn/interrupt, then the turn settles"),
    permissions=(
        S,
        "the CLI's command and file-change approval requests, unless the tool policy "
        "allows or denies them",
    ),
    user_choices=(U, "the CLI's questions to the user are declined"),
    mcp_http_tools=(U, "MCP servers are not passed to the CLI"),
    subagents=(U, "the CLI's multi-agent feature is turned off; no subagent is reported"),
    message_images=(S, "sent as image inputs"),
    workspace_tools=(
        S,
        "the CLI's shell and patch tools in the bound workspace, under its own "
        "workspace-write sandbox",
    ),
    conversation_memory=(
        S,
        "the CLI's native thread, resumed by the Runtime, also after a restart",
    ),
    **_NEVER,
)

# Claude Code over the Anthropic Messages API.
_CLAUDE_CODE = _row(
    streaming=(S, "text deltas as Claude Code streams them"),
    function_tools=(U, "Claude Code cannot call back to the client for a function result"),
    parallel_tool_calls=(S, "Claude Code runs several tool uses of one reply itself"),
    structured_output=(U, "not passed to Claude Code"),
    text_verbosity=(L, "Claude Code has no verbosity control; not sent"),
    reasoning_effort=(L, "not passed to Claude Code"),
    reasoning_summaries=(D, "thinking blocks the model streams are shown; no summaries"),
    usage=(S, "from the counts of each Claude Code result, cache reads as cached input"),
    steering=(
        D,
        "steered input is written to Claude Code at its next event (not while a tool "
        "runs silently) and joins its next model call",
    ),
    cancellation=(S, "the Claude Code process is stopped; the next turn resumes the session"),
    permissions=(S, "Claude Code's permission prompts are asked as approvals"),
    user_choices=(U, "Claude Code's questions are not forwarded"),
    subagents=(U, "Claude Code's own subagent tools are taken away; none is reported"),
    mcp_http_tools=(U, "the session's MCP servers are not passed to Claude Code"),
    message_images=(L, "images are ignored; only text parts are sent"),
    workspace_tools=(S, "Claude Code's own file and shell tools, in the bound workspace"),
    conversation_memory=(
        S,
        "Claude Code keeps the session's transcript; each new CLI process resumes it, "
        "also after a Runtime restart (Core sends back the native session id)",
    ),
    **(_NEVER | {"function_result_images": (U, "Claude Code takes no function results")}),
)

# (harness kind, protocol) -> feature -> support. `scripted` speaks no model protocol.
MATRIX: dict[tuple[str, str], dict[str, FeatureSupport]] = {
    ("scripted", "scripted"): _SCRIPTED,
    ("builtin", "chat_completions"): _CHAT,
    ("builtin", "responses"): _RESPONSES,
    ("codex", "responses"): _CODEX,
    ("claude_code", "anthropic_messages"): _CLAUDE_CODE,
}


class UnknownProfile(LookupError):
    """No matrix row for that harness and protocol."""


def protocols(kind: str) -> list[str]:
    """The protocols the matrix knows for a harness kind, in table order."""
    return [protocol for harness, protocol in MATRIX if harness == kind]


def profile(kind: str, protocol: str) -> dict[str, FeatureSupport]:
    """The complete row for one harness and protocol; raises UnknownProfile, or
    ValueError when the row does not decide every feature."""
    row = MATRIX.get((kind, protocol))
    if row is None:
        raise UnknownProfile(f"{kind}/{protocol}")
    missing = sorted(set(FEATURES) - set(row))
    extra = sorted(set(row) - set(FEATURES))
    if missing or extra:
        raise ValueError(f"matrix row {kind}/{protocol} is incomplete: {missing or extra}")
    return row


def refused(row: dict[str, FeatureSupport], needed: list[str]) -> list[str]:
    """The needed features the row labels unsupported, in the order given."""
    return [name for name in needed if row[name].support is Support.UNSUPPORTED]


def flagged(row: dict[str, FeatureSupport], needed: list[str]) -> list[str]:
    """The needed features that work but below `supported`, in the order given."""
    return [
        name for name in needed if row[name].support not in (Support.SUPPORTED, Support.UNSUPPORTED)
    ]
