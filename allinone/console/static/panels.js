// The session page's side panels: run state of a turn, usage, the timeline drawn to
// scale, artifacts and environment files.

import { get, raw } from "./api.js";
import { badge, bytes, card, empty, field, h, replace, short, stamp, turnState } from "./dom.js";

export function runState(turn, session) {
  if (!turn) return card("Run state", empty("No turn yet."));
  const state = turn.x_corebox || {};
  const checkpoint = state.checkpoint;
  const notes = state.capability_notes || ((session || {}).x_corebox || {}).capability_notes || [];
  // The API's status, and beside it the pause that holds the turn (its status stays
  // in_progress while it is paused), as the header and the turn card name it.
  const held = turnState(turn) !== turn.status ? turnState(turn) : null;
  return card("Run state",
    h("dl.facts", {},
      field("Turn", h("code", { title: turn.id }, short(turn.id))),
      field("Status", h("span", {}, badge(turn.status), held ? h("span.held", {}, ` · ${held}`) : null)),
      field("Phase", state.phase ? state.phase.replace(/_/g, " ") : null),
      field("State version", state.state_version),
      field("Worker epoch", state.worker_epoch),
      state.agent_version !== undefined ? field("Agent version", state.agent_version) : null,
      field("Error", turn.error ? `${turn.error.code}: ${turn.error.message}` : state.error_code),
      state.engine_error_code ? field("Engine error", `${state.engine_error_code}${state.engine_http_status ? ` (HTTP ${state.engine_http_status})` : ""}`) : null,
      state.unknown_inputs ? field("Unknown inputs", state.unknown_inputs) : null,
      checkpoint ? field("Checkpoint", `${checkpoint.boundary} @ ${checkpoint.journal_seq}`) : null,
      state.config_digest ? field("Config", h("code", { title: state.config_digest }, state.config_digest.slice(0, 12))) : null,
      field("Started", stamp(turn.started_at)),
      field("Completed", stamp(turn.completed_at))),
    notes.length ? [h("h3", {}, "Capability notes"),
      h("ul.notes", {}, notes.map((n) => h("li", {}, typeof n === "string" ? n : n.note || n.message || JSON.stringify(n))))] : null);
}

function total(turns) {
  const sum = { input_tokens: 0, output_tokens: 0, total_tokens: 0, input_tokens_details: { cached_tokens: 0 } };
  let any = false;
  for (const turn of turns) {
    if (!turn.usage) continue;
    any = true;
    sum.input_tokens += turn.usage.input_tokens || 0;
    sum.output_tokens += turn.usage.output_tokens || 0;
    sum.total_tokens += turn.usage.total_tokens || 0;
    sum.input_tokens_details.cached_tokens += (turn.usage.input_tokens_details || {}).cached_tokens || 0;
  }
  return any ? sum : null;
}

/** The session's usage: its own figure, else the sum of its turns'. */
export function usage(session, turns) {
  const u = session.usage || total(turns);
  if (!u) return card("Usage", empty("No usage reported yet."));
  return card("Usage",
    h("div.usage", {},
      h("div.stat", {}, h("span.stat-value", {}, u.input_tokens), h("span.stat-label", {}, "input")),
      h("div.stat", {}, h("span.stat-value", {}, u.output_tokens), h("span.stat-label", {}, "output")),
      h("div.stat", {}, h("span.stat-value", {}, u.total_tokens), h("span.stat-label", {}, "total"))),
    u.input_tokens_details && u.input_tokens_details.cached_tokens
      ? h("p.muted", {}, `${u.input_tokens_details.cached_tokens} cached`) : null);
}

const KIND_CLASS = {
  message: "t-message", reasoning: "t-reasoning", function_call: "t-tool", mcp_call: "t-tool",
  function_call_output: "t-output", command_execution: "t-command",
};

/**
 * Every turn of the session on one time axis (queued, then running), to scale; under it,
 * the items and tool calls of the turns watched live, placed at the times they arrived.
 */
export function timeline(turns, seen) {
  const now = Date.now();
  const spans = turns.filter((t) => t.created_at).map((t) => ({
    turn: t,
    queued: t.created_at * 1000,
    start: (t.started_at || t.created_at) * 1000,
    end: t.completed_at ? t.completed_at * 1000 + 999 : now,
  }));
  if (!spans.length) return card("Timeline", empty("Nothing to draw yet."));
  const items = [...seen.entries()].map(([id, s]) => ({ id, ...s }));
  const from = Math.min(...spans.map((s) => s.queued), ...items.map((i) => i.added));
  const to = Math.max(...spans.map((s) => s.end), ...items.map((i) => i.done || now), from + 1000);
  const x = (t) => `${(((t - from) / (to - from)) * 100).toFixed(2)}%`;
  const w = (a, b) => `${Math.max(((b - a) / (to - from)) * 100, 0.6).toFixed(2)}%`;
  const rows = spans.map((s, index) => h("div.tl-row", { title: `${s.turn.id} · ${s.turn.status}` },
    h("span.tl-label", {}, `Turn ${index + 1}`),
    h("span.tl-track", {},
      h("span.tl-bar.t-queued", { style: { left: x(s.queued), width: w(s.queued, s.start) } }),
      h("span.tl-bar", { dataset: { status: s.turn.status }, style: { left: x(s.start), width: w(s.start, s.end) } }))));
  const marks = items.map((i) => h("span.tl-bar.tl-item", {
    class: KIND_CLASS[i.type] || "t-other",
    title: `${i.type} ${((i.done || now) - i.added)} ms`,
    style: { left: x(i.added), width: w(i.added, i.done || now) },
  }));
  const total = ((to - from) / 1000).toFixed(1);
  return card("Timeline",
    h("div.timeline", {}, rows,
      marks.length ? h("div.tl-row", {}, h("span.tl-label", {}, "Items"), h("span.tl-track", {}, marks)) : null,
      h("div.tl-axis", {}, h("span", {}, "0 s"), h("span", {}, `${total} s`))),
    h("div.tl-legend", {},
      [["t-queued", "queued"], ["t-live", "running"], ["t-wait", "waiting"], ["t-run", "completed"],
        ["t-message", "message"], ["t-tool", "tool call"], ["t-command", "command"]]
        .map(([cls, label]) => h("span", {}, h("i", { class: cls }), label))));
}

async function download(sessionId, artifact) {
  const response = await raw(`/v1/agents/sessions/${sessionId}/artifacts/${artifact.id}/content`);
  const url = URL.createObjectURL(await response.blob());
  const link = h("a", { href: url, download: artifact.path.split("/").pop() || artifact.id });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export async function files(session, target) {
  const parts = [];
  try {
    const page = await get(`/v1/agents/sessions/${session.id}/artifacts?limit=50`);
    parts.push(card("Artifacts", page.data.length
      ? h("ul.file-list", {}, page.data.map((a) => h("li", {},
        h("button.link", { type: "button", onclick: () => download(session.id, a) }, a.path),
        h("span.muted", {}, bytes(a.size_bytes)))))
      : empty("No artifacts.")));
  } catch (error) {
    parts.push(card("Artifacts", empty(error.message)));
  }
  const env = session.environment || {};
  if (env.id && env.type !== "none") {
    try {
      const page = await get(`/v1/agents/environments/${env.id}/files?limit=50`);
      parts.push(card("Environment files", page.data.length
        ? h("ul.file-list", {}, page.data.map((f) => h("li", {}, h("code", {}, f.path), h("span.muted", {}, bytes(f.size_bytes)))))
        : empty("No files.")));
    } catch (error) {
      parts.push(card("Environment files", empty(error.message)));
    }
  }
  replace(target, parts);
}
