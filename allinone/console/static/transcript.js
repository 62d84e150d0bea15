// The session transcript: items grouped by turn, built from a snapshot (the items and
// turns lists) and then kept current by the session's event stream.

import { badge, h, json, replace, short, turnState } from "./dom.js";

const TURN_EVENTS = new Set([
  "agent.session.turn.created",
  "agent.session.turn.in_progress",
  "agent.session.turn.completed",
  "agent.session.turn.failed",
  "agent.session.turn.cancelled",
]);

function textOf(item) {
  return (item.content || [])
    .map((part) => part.text || (part.type === "input_image" ? "[image]" : ""))
    .join("");
}

/** What names a session after its first user message: its first line that is not a
 * directive (else its first line), at most 72 characters; "" for any other item. */
export function headline(item) {
  if (!item || item.type !== "message" || item.role !== "user") return "";
  const lines = textOf(item).split("\n").map((line) => line.trim()).filter(Boolean);
  const first = lines.find((line) => !line.startsWith("/")) || lines[0] || "";
  return first.length > 72 ? `${first.slice(0, 72)}…` : first;
}

function roleLabel(item) {
  if (item.role === "user") return "You";
  return item.phase === "commentary" ? "Agent · commentary" : "Agent";
}

function running(item) {
  return item.status === "in_progress";
}

export class Transcript {
  constructor() {
    this.node = h("div.transcript", { "aria-live": "polite" });
    this.turns = new Map(); // turn id -> { turn, section, head, body }
    this.items = new Map(); // item id -> { item, node, text }
    this.seen = new Map(); // item id -> { added, done } (ms, while watching)
    this.order = [];
    this.hidden = new Set(); // ids of the turns rewinds hid from the model
    this.onTurn = () => {};
    this.emptyNote = h("p.empty", {}, "No turns yet. Send a message below to start one.");
    this.node.append(this.emptyNote);
  }

  load(turns, items) {
    this.turns.clear();
    this.items.clear();
    this.order = [];
    replace(this.node, this.emptyNote);
    turns.forEach((turn) => this.upsertTurn(turn));
    items.forEach((item) => this.upsertItem(item));
    this.emptyNote.hidden = this.turns.size > 0;
  }

  /** The text of the session's first user message, for a title. */
  firstUserText() {
    for (const { item } of this.items.values()) {
      if (item.type === "message" && item.role === "user") return headline(item);
    }
    return "";
  }

  /** Mark the turns a rewind hid from the model's context (the session's
   * `x_corebox.hidden_turn_ids`); they stay in the history. */
  setHidden(ids) {
    const hidden = new Set(ids || []);
    const changed = [...this.turns.keys()].filter((id) => hidden.has(id) !== this.hidden.has(id));
    this.hidden = hidden;
    changed.forEach((id) => this.drawTurnHead(this.turns.get(id)));
  }

  turnList() {
    return this.order.map((id) => this.turns.get(id).turn);
  }

  upsertTurn(turn) {
    let entry = this.turns.get(turn.id);
    if (!entry) {
      const head = h("div.turn-head");
      const body = h("div.turn-body");
      const section = h("section.turn", { dataset: { turnId: turn.id } }, head, body);
      entry = { turn, section, head, body };
      this.turns.set(turn.id, entry);
      this.order.push(turn.id);
      this.node.append(section);
      this.emptyNote.hidden = true;
    }
    entry.turn = { ...entry.turn, ...turn };
    this.drawTurnHead(entry);
    this.onTurn(entry.turn);
    return entry;
  }

  drawTurnHead(entry) {
    const turn = entry.turn;
    const state = turn.x_corebox || {};
    const number = this.order.indexOf(turn.id) + 1;
    const meta = [];
    if (state.phase) meta.push(`phase ${state.phase.replace(/_/g, " ")}`);
    if (state.state_version !== undefined) meta.push(`v${state.state_version}`);
    if (state.worker_epoch) meta.push(`epoch ${state.worker_epoch}`);
    if (state.agent_version) meta.push(`agent v${state.agent_version}`);
    const duration = turn.started_at && turn.completed_at ? `${turn.completed_at - turn.started_at} s` : null;
    const error = turn.error || (state.error_code ? { code: state.error_code } : null);
    const hidden = this.hidden.has(turn.id);
    entry.section.classList.toggle("hidden-turn", hidden);
    replace(entry.head,
      h("div.turn-title", {}, h("span.turn-number", {}, `Turn ${number}`), badge(turnState(turn)),
        duration ? h("span.muted", {}, duration) : null,
        hidden ? h("span.turn-hidden", { title: "A rewind hid this turn from the model's context. It stays in the history." }, "Hidden from the model") : null),
      h("div.turn-meta", { title: turn.id }, meta.join(" · ")),
      error ? h("div.turn-error", { role: "note" },
        h("strong", {}, error.code || "error"),
        error.message ? ` ${error.message}` : "",
        state.engine_error_code ? ` (engine: ${state.engine_error_code})` : "") : null);
  }

  section(turnId) {
    if (turnId && !this.turns.has(turnId)) {
      this.upsertTurn({ id: turnId, status: "in_progress" });
    }
    const entry = turnId ? this.turns.get(turnId) : this.turns.get(this.order[this.order.length - 1]);
    return entry ? entry.body : this.node;
  }

  upsertItem(item, live = false) {
    const id = item.id || `${item.type}-${this.items.size}`;
    const existing = this.items.get(id);
    const fresh = this.drawItem(item);
    if (existing) {
      existing.node.replaceWith(fresh.node);
    } else {
      this.section(item.turn_id).append(fresh.node);
    }
    this.items.set(id, { item, ...fresh });
    this.follow();
    if (live) {
      const times = this.seen.get(id) || { added: Date.now(), done: null, type: item.type, turn: item.turn_id };
      if (!running(item)) times.done = times.done || Date.now();
      this.seen.set(id, times);
    }
  }

  drawItem(item) {
    switch (item.type) {
      case "message": {
        const text = h("div.msg-text", {}, textOf(item));
        const node = h(`div.msg.${item.role}`, { dataset: { itemId: item.id || "", status: item.status || "" } },
          h("div.msg-role", {}, roleLabel(item)), text);
        return { node, text };
      }
      case "reasoning": {
        const text = h("div.reasoning-text", {}, (item.summary || []).map((p) => p.text).join("\n"));
        const first = (item.summary || []).map((p) => p.text).join(" ").split("\n")[0];
        const node = h("details.reasoning", { open: running(item), dataset: { itemId: item.id } },
          h("summary", {}, "Reasoning", first ? h("span.reasoning-peek", {}, ` · ${first.slice(0, 90)}`) : null), text);
        return { node, text };
      }
      case "function_call":
        return {
          node: h("div.tool", { dataset: { itemId: item.id } },
            h("div.tool-head", {}, h("span.tool-kind", {}, "Function call"), h("code", {}, item.name), badge(item.status)),
            h("pre.code", {}, json(item.arguments))),
        };
      case "function_call_output":
        return {
          node: h("div.tool.output", { dataset: { itemId: item.id } },
            h("div.tool-head", {}, h("span.tool-kind", {}, item.error ? "Function error" : "Function result"),
              h("code.muted", {}, short(item.call_id))),
            h("pre.code", {}, item.error ? item.error : json(typeof item.output === "string" ? item.output : item.output || ""))),
        };
      case "command_execution": {
        const text = h("pre.terminal-out", {}, item.output || "");
        const exit = item.exit_code === null || item.exit_code === undefined ? null
          : h("span.exit", { dataset: { ok: String(item.exit_code === 0) } }, `exit ${item.exit_code}`);
        return {
          node: h("div.command", { dataset: { itemId: item.id } },
            h("div.command-head", {}, h("code", {}, `$ ${item.command}`), exit,
              item.duration_ms ? h("span.muted", {}, `${item.duration_ms} ms`) : null),
            text),
          text,
        };
      }
      case "mcp_call":
        return {
          node: h("div.tool", { dataset: { itemId: item.id } },
            h("div.tool-head", {}, h("span.tool-kind", {}, `Tool · ${item.server_label}`), h("code", {}, item.name), badge(item.status)),
            h("pre.code", {}, json(item.arguments)),
            item.output !== null && item.output !== undefined ? h("pre.code.result", {}, json(item.output)) : null,
            item.error ? h("pre.code.error", {}, json(item.error)) : null),
        };
      default:
        return {
          node: h("div.tool", { dataset: { itemId: item.id || "" } },
            h("div.tool-head", {}, h("span.tool-kind", {}, item.type.replace(/_/g, " ")), item.status ? badge(item.status) : null),
            h("pre.code", {}, json(item))),
        };
    }
  }

  appendText(itemId, delta) {
    const entry = this.items.get(itemId);
    if (!entry || !entry.text) return;
    entry.text.append(document.createTextNode(delta));
    this.follow();
  }

  /** Keep the newest part in view while the reader is at the bottom (not reading back). */
  follow() {
    const scroller = this.node.parentNode;
    if (!scroller || !scroller.classList || !scroller.classList.contains("transcript-scroll")) return;
    if (!scroller.dataset.watched) {
      scroller.dataset.watched = "true";
      scroller.dataset.follow = "true";
      scroller.addEventListener("scroll", () => {
        const gap = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
        scroller.dataset.follow = String(gap < 80);
      });
    }
    if (scroller.dataset.follow === "true") scroller.scrollTop = scroller.scrollHeight;
  }

  setText(itemId, text) {
    const entry = this.items.get(itemId);
    if (entry && entry.text) entry.text.textContent = text;
  }

  /** Apply one event of the session stream; true when it changed a turn. */
  apply(event) {
    const type = event.type;
    if (TURN_EVENTS.has(type) && event.turn) {
      this.upsertTurn(event.turn);
      return true;
    }
    switch (type) {
      case "agent.session.turn.item.added":
      case "agent.session.turn.item.done":
        this.upsertItem(event.item, true);
        break;
      case "agent.session.turn.output_text.delta":
      case "agent.session.turn.reasoning_summary_text.delta":
      case "agent.output.command_execution_output.delta":
        this.appendText(event.item_id, event.delta);
        break;
      case "agent.session.turn.output_text.done":
      case "agent.session.turn.reasoning_summary_text.done":
        this.setText(event.item_id, event.text);
        break;
      default:
        break;
    }
    return false;
  }
}
