// The live list of sessions: what each is about, status, agent, last activity;
// refreshed while shown.

import { get, post } from "../api.js";
import { badge, card, empty, failure, h, pageHead, replace, table, turnState, when } from "../dom.js";
import { headline } from "../transcript.js";

const REFRESH_MS = 2000;

// What changes when a session runs a turn: its activity time (to the second), its status
// and its usage.
const stamp = (s) => JSON.stringify([s.last_active_at, s.status, s.usage]);

// A session is named by its `metadata.title`, else by its first user message (read once
// per session, as its page names it; again only after it ran while it had none).
class Headlines {
  constructor() {
    this.known = new Map(); // session id -> { text, at: its stamp when read }
  }

  of(session) {
    if (session.metadata && session.metadata.title) return session.metadata.title;
    const found = this.known.get(session.id);
    return found ? found.text : "";
  }

  async read(sessions) {
    const wanted = sessions.filter((s) => {
      if (s.metadata && s.metadata.title) return false;
      const found = this.known.get(s.id);
      return !found || (!found.text && found.at !== stamp(s));
    });
    await Promise.all(wanted.map(async (s) => {
      try {
        const first = await get(`/v1/agents/sessions/${s.id}/items?limit=1&order=asc`);
        this.known.set(s.id, { text: headline(first.data[0]), at: stamp(s) });
      } catch {
        // Unnamed this time; the next refresh asks again.
      }
    }));
  }
}

// A running session's state as its latest turn has it: paused, pausing or resuming while
// a pause holds that turn (the session itself says in_progress). Read at each refresh
// for the sessions in progress only; a pause changes nothing on the session.
async function heldStates(sessions) {
  const held = new Map();
  await Promise.all(sessions.filter((s) => s.status === "in_progress").map(async (s) => {
    try {
      const latest = (await get(`/v1/agents/sessions/${s.id}/turns?limit=1&order=desc`)).data[0];
      if (latest && turnState(latest) !== latest.status) held.set(s.id, turnState(latest));
    } catch {
      // Its status as the session has it, this time.
    }
  }));
  return held;
}

function columns(headlines, held) {
  return [
    { title: "Session", render: (s) => {
      const name = headlines.of(s);
      return name
        ? h("div.cell-main", {}, h("strong", {}, name), h("code.muted", {}, s.id))
        : h("code.session-id", {}, s.id);
    } },
    { title: "Status", render: (s) => badge(held.get(s.id) || s.status) },
    { title: "Agent", render: (s) => h("span", {}, s.agent ? s.agent.name || s.agent.model : "—") },
    { title: "Last activity", class: "num", render: (s) => when(s.last_active_at) },
  ];
}

function newSessionForm(onCreated) {
  const model = h("input.input", { value: "scripted", "aria-label": "Model", required: true });
  // A session without a workspace starts with its first message (the API requires one).
  const text = h("input.input", { placeholder: "First message", "aria-label": "First message", required: true });
  const error = h("p.notice.error", { hidden: true });
  return h("form.inline-form", {
    onsubmit: async (event) => {
      event.preventDefault();
      error.hidden = true;
      try {
        const body = { agent: { model: model.value.trim() }, environment: { type: "none" } };
        if (text.value.trim()) body.input = text.value;
        const session = await post("/v1/agents/sessions", body);
        onCreated(session);
      } catch (exc) {
        error.textContent = exc.message;
        error.hidden = false;
      }
    },
  }, h("label.label", {}, "Model", model), h("label.label.grow", {}, "Message", text),
  h("button.button.primary", { type: "submit" }, "Start session"), error);
}

export function render(main) {
  const list = h("div", {}, h("p.muted", {}, "Loading…"));
  const formBox = h("div", { hidden: true });
  const toggle = h("button.button.primary", {
    type: "button",
    onclick: () => {
      formBox.hidden = !formBox.hidden;
      if (!formBox.hidden) formBox.querySelector("input").focus();
    },
  }, "New session");
  formBox.append(card("New session", newSessionForm((s) => { location.hash = `#/sessions/${s.id}`; })));
  main.append(pageHead("Sessions", "Every session of this project, newest activity first.", toggle), formBox, list);
  let timer = null;
  let stopped = false;
  const headlines = new Headlines();
  const load = async () => {
    try {
      const page = await get("/v1/agents/sessions?limit=100&order=desc");
      const [held] = await Promise.all([heldStates(page.data), headlines.read(page.data)]);
      if (stopped) return;
      const rows = [...page.data].sort((a, b) => (b.last_active_at || 0) - (a.last_active_at || 0));
      replace(list, rows.length
        ? table(columns(headlines, held), rows, { label: "Sessions", onRow: (s) => { location.hash = `#/sessions/${s.id}`; } })
        : empty("No sessions yet. Start one above, or with the SDK."));
    } catch (error) {
      if (!stopped) replace(list, failure(error));
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  };
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
