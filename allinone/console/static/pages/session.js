// One session: the live transcript, its pending actions, the composer and the controls,
// with run state, usage, timeline and files beside it.

import { showActions } from "../actions.js";
import { ApiError, get, idempotencyKey, look, post, stream, supports } from "../api.js";
import { badge, h, notFound, replace, short, turnState, when } from "../dom.js";
import { files, runState, timeline, usage } from "../panels.js";
import { watchSetup } from "../setup.js";
import { Transcript } from "../transcript.js";

const ACTIVE = new Set(["queued", "in_progress", "waiting"]);
// While a kill switch holds the session, how often it is read again: removing one
// announces nothing on the session's stream.
const HELD_REFRESH_MS = 5000;

/** The kill switch that holds `session` (its `x_corebox.overlays`), or null. */
function killSwitch(session) {
  return ((session.x_corebox || {}).overlays || []).find((o) => o.kind === "kill_switch" && !o.cleared_at) || null;
}

/** A turn a drain keeps from running until corebox restarts: queued (no turn is claimed)
 * or stopped at a checkpoint to be claimed again (phase resuming). */
function drainable(turn) {
  return Boolean(turn) && (turn.status === "queued" || (turn.x_corebox || {}).phase === "resuming");
}

async function all(path, limit = 1000) {
  const found = [];
  let after = null;
  while (found.length < limit) {
    const page = await get(`${path}${path.includes("?") ? "&" : "?"}limit=100${after ? `&after=${after}` : ""}`);
    found.push(...page.data);
    if (!page.has_more || !page.last_id) break;
    after = page.last_id;
  }
  return found;
}

// What a settled pause or resume command came to, as the status line says it.
const ENDINGS = { turn_completed: "completed", turn_failed: "failed", turn_cancelled: "was cancelled" };

function outcome(command) {
  const what = command.action;
  if (command.status === "applied") return `${what} applied`;
  if (command.status === "expired") {
    return `${what} not applied: the turn ${ENDINGS[command.reason] || "ended"} first`;
  }
  return `${what} rejected${command.reason ? ` (${command.reason.replace(/_/g, " ")})` : ""}`;
}

class SessionPage {
  constructor(main, sessionId) {
    this.id = sessionId;
    this.base = `/v1/agents/sessions/${sessionId}`;
    this.abort = new AbortController();
    this.session = null;
    this.sessionEvents = 0; // session-level events applied; a read older than one is stale
    this.transcript = new Transcript();
    this.transcript.onTurn = () => this.scheduleSide();
    this.header = h("div.session-head");
    this.controls = h("div.controls", { role: "toolbar", "aria-label": "Session controls" });
    this.actions = h("div.actions", { "aria-live": "assertive" });
    this.notice = h("div.stream-state", { role: "status" });
    this.connection = null; // "live" once the stream is read, "reconnecting" while it is not
    this.said = null; // { text, error } beside it: what the last action came to
    this.pending = null; // the pause or resume command not yet settled: { id, action }
    this.turnStates = ""; // the turns' states as last read (a change clears `said`)
    this.holdNote = h("p.notice.hold-note", { role: "status", hidden: true });
    this.draining = false; // corebox is draining (its /readyz), asked while a turn waits
    this.heldTimer = null;
    this.setupBox = h("div.setup-box");
    this.stopSetup = null;
    this.side = h("aside.session-side");
    this.filesBox = h("div");
    this.selected = null;
    this.composer = this.buildComposer();
    this.composer.hidden = true; // until the session is read: none for one that is not there
    this.main = main;
    main.append(h("div.session-page", {},
      this.header,
      h("div.session-grid", {},
        h("div.session-main", {},
          this.setupBox,
          h("div.transcript-scroll", {}, this.transcript.node),
          this.actions, this.holdNote, this.composer, this.notice),
        this.side)));
    this.connect(0);
  }

  stop() {
    this.abort.abort();
    if (this.stopSetup) this.stopSetup();
    clearTimeout(this.sideTimer);
    clearInterval(this.clock);
    clearInterval(this.heldTimer);
  }

  buildComposer() {
    this.input = h("textarea.input", { rows: 2, placeholder: "Message the agent…", "aria-label": "Message" });
    this.sendButton = h("button.button.primary", { type: "submit" }, "Send");
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.metaKey || event.ctrlKey)) this.composer.requestSubmit();
    });
    this.hint = h("span.composer-hint", {}, "Ctrl+Enter to send");
    return h("form.composer", { onsubmit: (event) => { event.preventDefault(); this.send(); } },
      this.input, h("div.composer-row", {}, this.hint, this.sendButton));
  }

  async send() {
    const text = this.input.value;
    if (!text.trim()) return;
    this.sendButton.disabled = true;
    try {
      await post(`${this.base}/events`, {
        events: [{ type: "agent.session.input.message", input: [{ role: "user", content: [{ type: "input_text", text }] }] }],
      });
      this.input.value = "";
    } catch (error) {
      this.flash(error.message);
    } finally {
      this.sendButton.disabled = false;
    }
  }

  flash(message) {
    this.say(message, true);
  }

  /** Say `text` on the status line, beside the stream's state, until the turns change
   * or something else is said. */
  say(text, error = false) {
    this.said = text ? { text, error } : null;
    this.drawNotice();
  }

  drawNotice() {
    const state = this.connection === "live" ? h("span.live", {}, "Live")
      : this.connection === "reconnecting" ? h("span.muted", {}, "Reconnecting…") : null;
    const pending = this.pending ? `${this.pending.action} requested: waiting for it to apply` : null;
    const said = this.said || (pending ? { text: pending, error: false } : null);
    replace(this.notice, state,
      said ? h(said.error ? "span.error" : "span.muted", {}, state ? ` · ${said.text}` : said.text) : null);
  }

  async connect(attempt) {
    const queued = [];
    let ready = false;
    try {
      await stream(`${this.base}/events?include_obfuscation=false`, {
        signal: this.abort.signal,
        onOpen: async () => {
          await this.snapshot();
          ready = true;
          queued.splice(0).forEach((event) => this.apply(event));
          this.connection = "live";
          this.drawNotice();
          attempt = 0;
        },
        onEvent: (event) => (ready ? this.apply(event) : queued.push(event)),
      });
    } catch (error) {
      if (this.abort.signal.aborted) return;
      if (error instanceof ApiError && error.status === 404) {
        replace(this.main, notFound(`No session ${this.id} in this project.`, "#/sessions", "Sessions"));
        return;
      }
    }
    if (this.abort.signal.aborted) return;
    this.connection = "reconnecting";
    this.drawNotice();
    const delay = Math.min(500 * 2 ** attempt, 5000);
    setTimeout(() => this.connect(attempt + 1), delay);
  }

  async snapshot() {
    const [session, turns, items] = await Promise.all([
      get(this.base), all(`${this.base}/turns?order=asc`), all(`${this.base}/items?order=asc`),
    ]);
    this.transcript.load(turns, items);
    this.showSession(session);
    files(session, this.filesBox);
    this.transcript.follow();
    this.checkDrain();
  }

  /** Whether corebox is draining, asked while a turn waits in a way a drain holds. */
  async checkDrain() {
    let draining = false;
    if (drainable(this.activeTurn())) {
      const ready = await look("/readyz").catch(() => null);
      const check = ready && ready.body && ready.body.checks ? ready.body.checks.drain : null;
      draining = Boolean(check && !check.ok);
    }
    if (draining !== this.draining) {
      this.draining = draining;
      this.drawState();
    }
  }

  apply(event) {
    if (event.session && event.type.startsWith("agent.session.") && !event.type.includes(".turn.")) {
      this.sessionEvents += 1;
      this.showSession(event.session);
      // The choice prompts are a corebox extension: read them from the stored session.
      // The turn is now waiting: its run state is read from the turns list.
      if (event.type === "agent.session.requires_action") {
        this.refresh();
        this.refreshTurns();
      }
    }
    if (this.transcript.apply(event)) {
      this.refreshTurns();
    }
    if (event.type === "agent.session.turn.completed" || event.type === "agent.session.turn.failed") {
      files(this.session, this.filesBox);
    }
    this.scheduleSide();
  }

  async refresh() {
    const at = this.sessionEvents;
    try {
      const session = await get(this.base);
      // A session event applied while this read was in flight is newer than what it read
      // (an answered prompt must not come back from a read that started before).
      if (at === this.sessionEvents) this.showSession(session);
    } catch (error) {
      this.flash(error.message);
    }
  }

  async refreshTurns() {
    const read = (this.turnReads = (this.turnReads || 0) + 1);
    try {
      const before = this.transcript.turnList().map((t) => t.status).join();
      const turns = await all(`${this.base}/turns?order=asc`);
      // A read that started before a later one is older than it: it would undo it.
      if (read !== this.turnReads) return;
      turns.forEach((turn) => this.transcript.upsertTurn(turn));
      if (this.transcript.turnList().map((t) => t.status).join() !== before) this.refresh();
      const states = this.transcript.turnList().map(turnState).join();
      if (states !== this.turnStates) {
        // What the last action came to is old news once the turns moved on; what holds
        // them (an overlay, a drain) is read again.
        this.turnStates = states;
        if (!this.pending) this.say(null);
        this.refresh();
        this.checkDrain();
      }
      await this.settleCommand();
    } catch (error) {
      this.flash(error.message);
    }
  }

  /** Read the pending command again; once it left `accepted`, say what it came to. */
  async settleCommand() {
    const pending = this.pending;
    if (!pending) return;
    const command = await get(`/x/v1/commands/${pending.id}`);
    if (command.status === "accepted" || this.pending !== pending) return;
    this.pending = null;
    this.say(outcome(command), command.status !== "applied");
  }

  activeTurn() {
    const turns = this.transcript.turnList();
    return [...turns].reverse().find((t) => ACTIVE.has(t.status)) || null;
  }

  showSession(session) {
    this.session = { ...this.session, ...session };
    this.composer.hidden = false;
    const s = this.session;
    const xc = s.x_corebox || {};
    const forked = xc.forked_from;
    if (!this.titleText) {
      // Built once: later updates change text only, so a control is never replaced under
      // a pointer that is clicking it.
      this.titleText = h("h1");
      this.statusSlot = h("span");
      this.meta = h("div.session-meta");
      replace(this.header,
        h("div.crumbs", {}, h("a", { href: "#/sessions" }, "Sessions"), " / ", h("span", {}, short(s.id))),
        h("div.session-title", {}, this.titleText, this.statusSlot, this.controls),
        this.meta);
    }
    this.titleText.textContent = this.title(s);
    replace(this.meta,
      h("span", {}, h("code", {}, s.id)),
      s.agent && s.agent.name ? h("span", {}, `agent ${s.agent.name}`) : null,
      h("span", {}, `model ${s.agent ? s.agent.model : "—"}`),
      xc.harness ? h("span", {}, `harness ${xc.harness}`) : null,
      h("span", {}, `active ${when(s.last_active_at)}`),
      forked ? h("span", {}, "forked from ", h("a", { href: `#/sessions/${forked.session_id}` }, short(forked.session_id))) : null,
      (xc.overlays || []).map((o) => h("span.overlay", {}, badge(o.kind), o.reason ? ` ${o.reason}` : "")));
    this.watchEnvironment(s.environment);
    this.transcript.setHidden(xc.hidden_turn_ids);
    showActions(this.actions, s);
    this.drawState();
    this.scheduleSide();
  }

  /** What follows the turns' run state as well as the session's: the session's badge
   * (paused while a pause holds its turn), the composer's hint and the controls. */
  drawState() {
    const s = this.session;
    if (!s || !this.statusSlot) return;
    const turn = this.activeTurn();
    const held = turn && turnState(turn) !== turn.status ? turnState(turn) : null;
    replace(this.statusSlot, badge(held || s.status));
    const active = ["in_progress", "requires_action"].includes(s.status) || turn;
    const queued = turn && turn.status === "queued";
    const hold = this.hold(turn);
    this.holdNote.hidden = !hold;
    this.holdNote.textContent = hold ? hold.note : "";
    this.sendButton.textContent = active && !queued ? "Steer" : "Send";
    this.sendButton.disabled = Boolean(hold && hold.refused);
    this.hint.textContent = hold && hold.hint ? hold.hint
      : held === "paused" ? "The turn is paused: your message steers it once it resumes · Ctrl+Enter"
        : queued ? "The turn is queued: your message joins its input · Ctrl+Enter"
          : held === "resuming" ? "The turn is resuming: your message steers it once it runs · Ctrl+Enter"
            : active ? "A turn is running: your message steers it · Ctrl+Enter" : "Ctrl+Enter to send";
    // A kill switch's removal announces nothing: read the session again while one holds it.
    if (hold && hold.refused && !this.heldTimer) {
      this.heldTimer = setInterval(() => this.refresh(), HELD_REFRESH_MS);
    } else if (!(hold && hold.refused) && this.heldTimer) {
      clearInterval(this.heldTimer);
      this.heldTimer = null;
    }
    this.drawControls();
  }

  /** What holds the session's turn where no control of this page can move it: a kill
   * switch (new input refused; a pause one keeps its turns paused) or a drain (no turn
   * is claimed until corebox restarts). Null when nothing does. */
  hold(turn) {
    const kill = killSwitch(this.session);
    if (kill) {
      const why = kill.reason ? ` (${kill.reason})` : "";
      const paused = kill.value === "pause" ? "its turns stay paused and " : "";
      return {
        note: `A kill switch (${kill.value}) holds this session${why}: ${paused}new messages are refused until an owner removes it.`,
        hint: "New messages are refused while the kill switch holds this session",
        refused: true,
      };
    }
    if (!this.draining || !drainable(turn)) return null;
    if (turn.status === "queued") {
      return { note: "corebox is draining: no turn starts until it restarts. This turn is queued: it starts when corebox restarts." };
    }
    return {
      note: "corebox is draining: this turn stopped and continues from its checkpoint when corebox restarts.",
      hint: "The turn is held until corebox restarts: your message steers it then · Ctrl+Enter",
    };
  }

  /** While a managed environment sets up, a progress line above the transcript; it goes
   * once set-up is done (a failure stays). */
  watchEnvironment(environment) {
    if (this.stopSetup || !environment || !environment.id || environment.type !== "openai_hosted") return;
    this.stopSetup = watchSetup(environment.id, this.setupBox, (settled) => {
      if (settled.status === "ready") this.setupBox.replaceChildren();
    });
  }

  title(s) {
    if (s.metadata && s.metadata.title) return s.metadata.title;
    const first = this.transcript.firstUserText();
    if (first) return first;
    return s.agent && s.agent.name ? s.agent.name : "Session";
  }

  async drawControls() {
    const [commands, fork, rewind] = await Promise.all([
      supports(`/x/v1/sessions/${this.id}/commands`),
      supports(`/x/v1/sessions/${this.id}/fork`),
      supports(`/x/v1/sessions/${this.id}/rewind`),
    ]);
    // Read the state after the probes: a later update may have drawn in the meantime.
    const turns = this.transcript.turnList();
    const latest = turns[turns.length - 1];
    const turn = this.activeTurn();
    const phase = latest && latest.x_corebox ? latest.x_corebox.phase : null;
    // Under a kill switch a pause or resume would only wait for it: neither is offered
    // (a cancel is still taken).
    const steerable = commands && !killSwitch(this.session || {});
    const buttons = [];
    if (turn) buttons.push(this.control("Cancel", "danger", () => this.cancel()));
    if (steerable && turn && phase !== "paused" && phase !== "pausing" && phase !== "pause_requested") {
      buttons.push(this.control("Pause", "", () => this.command("pause")));
    }
    if (steerable && phase === "paused") {
      buttons.push(this.control("Resume", "primary", () => this.command("resume")));
    }
    const finished = this.transcript.turnList().some((t) => !ACTIVE.has(t.status));
    if (fork && finished) buttons.push(this.control("Fork", "", () => this.fork()));
    if (rewind && finished && !turn) buttons.push(this.control("Rewind 1 turn", "ghost", () => this.rewind()));
    // Replace the buttons only when the set changes (a click in flight keeps its target).
    const signature = buttons.map((b) => b.dataset.control).join();
    if (signature !== this.controls.dataset.signature) {
      this.controls.dataset.signature = signature;
      replace(this.controls, buttons);
    }
  }

  control(label, kind, action) {
    const button = h(`button.button.${kind || "secondary"}`, { type: "button", dataset: { control: label.split(" ")[0].toLowerCase() } }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await action();
      } catch (error) {
        this.flash(error.message);
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }

  cancel() {
    return post(`${this.base}/events`, { events: [{ type: "agent.session.input.cancel" }] });
  }

  /** A pause or resume command for the turn it applies to now (read at click time). */
  async command(action) {
    const turns = this.transcript.turnList();
    const paused = [...turns].reverse().find((t) => (t.x_corebox || {}).phase === "paused");
    const turn = action === "resume" ? paused || this.activeTurn() : this.activeTurn();
    if (!turn) return;
    const state = turn.x_corebox || {};
    const sent = await post(`/x/v1/sessions/${this.id}/commands`, {
      action, turn_id: turn.id, expected_state_version: state.state_version ?? null, reason: "console",
    }, { "Idempotency-Key": idempotencyKey() });
    this.said = null;
    this.pending = sent.status === "accepted" ? { id: sent.id, action } : null;
    if (this.pending) this.drawNotice();
    else this.say(outcome(sent), sent.status !== "applied");
    // It may have applied before this page heard of it: the turns read now say so.
    this.refreshTurns();
  }

  async fork() {
    const forked = await post(`/x/v1/sessions/${this.id}/fork`, { turn_id: null, item_id: null });
    location.hash = `#/sessions/${forked.id}`;
  }

  async rewind() {
    const result = await post(`/x/v1/sessions/${this.id}/rewind`, { turns: 1 });
    this.say(`Rewound: ${result.hidden_turn_ids.length} turn hidden from the model`);
    // A rewind writes no event; the session read again says which turns are hidden now.
    this.showSession(await get(this.base));
  }

  scheduleSide() {
    if (this.sideTimer) return;
    // At most one redraw per burst of events (a turn's phase moves the controls too).
    this.sideTimer = setTimeout(() => {
      this.sideTimer = null;
      this.drawSide();
      this.drawState();
    }, 40);
  }

  drawSide() {
    if (!this.session) return;
    const turns = this.transcript.turnList();
    const turn = turns[turns.length - 1] || null;
    replace(this.side, runState(turn, this.session), usage(this.session, turns), timeline(turns, this.transcript.seen), this.filesBox);
  }
}

export function render(main, params) {
  const page = new SessionPage(main, params[0]);
  return () => page.stop();
}
