// Readiness evidence, connected Runtimes with their harness capability matrix, active
// overlays and storage.

import { get, idempotencyKey, look, post, signedIn, supports } from "../api.js";
import { askFirst, badge, card, empty, failure, field, h, pageHead, replace } from "../dom.js";

const REFRESH_MS = 5000;

function checks(ready) {
  const entries = Object.entries(ready.checks || {});
  return card("Readiness",
    h("div.check-grid", {}, entries.map(([name, check]) => h("div.check", { dataset: { ok: String(Boolean(check.ok)) } },
      h("span.check-dot"), h("span.check-name", {}, name),
      h("span.check-detail", {}, detail(name, check))))),
    ready.missing && ready.missing.length ? h("p.notice.error", {}, `Not ready: ${ready.missing.join(", ")}`) : null);
}

function detail(name, check) {
  if (name === "storage") return check.latency_ms !== undefined ? `schema ${check.schema_version} · ${check.latency_ms} ms` : "";
  if (name === "runtime") return check.connected_count !== undefined ? `${check.connected_count} connected` : "";
  if (name === "confinement") return check.kind || "";
  if (name === "turns" && check.error) return `unknown (${check.error})`;
  if (name === "turns" && check.active !== undefined) return turns(check);
  if (name === "drain") return check.ok ? "ok" : "draining";
  if (name === "overlays" && Array.isArray(check.active)) {
    return check.active.length ? `${check.active.length} active` : "none";
  }
  return check.ok ? "ok" : "failing";
}

// The work in hand, as `corebox status` reads it: a paused turn is also counted as active
// or queued, by its status; a suspended one (stopped at a checkpoint, to be claimed
// again) as active.
function turns(check) {
  const shown = [`${check.active} active`, `${check.queued} queued`];
  if (check.paused) shown.push(`${check.paused} of them paused`);
  if (check.resuming) shown.push(`${check.resuming} of them suspended at a checkpoint`);
  return shown.join(" · ");
}

function runtimes(ready) {
  const runtime = (ready.checks || {}).runtime || {};
  const connected = runtime.connected || [];
  if (!connected.length) {
    return card("Runtimes", runtime.connected_count !== undefined
      ? h("p", {}, `${runtime.connected_count} connected · agent kinds: ${(runtime.agent_kinds || []).join(", ") || "none"}`)
      : empty("Sign in to see the connected Runtimes."));
  }
  return card("Runtimes", h("ul.plain", {}, connected.map((r) => h("li.runtime", {},
    h("code", {}, r.device_id), badge(r.declared ? "declared" : "connecting"),
    h("span.muted", {}, (r.agent_kinds || []).join(", "))))));
}

function matrix(harnesses) {
  const names = new Set();
  const columns = harnesses.map((harness) => {
    const device = (harness.devices || [])[0] || {};
    const capabilities = device.capabilities || {};
    Object.keys(capabilities).forEach((key) => names.add(key));
    return { kind: harness.kind, available: harness.available, capabilities };
  });
  if (!columns.length) return card("Harness capabilities", empty("No harness is registered."));
  const rows = [...names].sort();
  return card("Harness capabilities",
    h("div.table-wrap", {}, h("table.table.matrix", { "aria-label": "Harness capabilities" },
      h("thead", {}, h("tr", {}, h("th", {}, "Capability"), columns.map((c) => h("th.center", {}, c.kind, c.available ? null : h("span.muted", {}, " (off)"))))),
      h("tbody", {}, rows.map((name) => h("tr", {},
        h("td", {}, name.replace(/_/g, " ")),
        columns.map((c) => h("td.center", {}, c.capabilities[name]
          ? h("span.yes", { "aria-label": "yes" }, "✓") : h("span.no", { "aria-label": "no" }, "–")))))))));
}

function overlays(list) {
  return card("Active overlays", list.length
    ? h("ul.plain", {}, list.map((o) => h("li", {}, badge(o.kind), " ", h("code", {}, o.agent_id || o.project_id || ""), " ", h("span.muted", {}, o.reason || ""))))
    : empty("No overlay is active."));
}

function storage(ready) {
  const s = (ready.checks || {}).storage || {};
  return card("Storage", h("dl.facts", {},
    field("Schema version", s.schema_version),
    field("Probe latency", s.latency_ms !== undefined ? `${s.latency_ms} ms` : null),
    s.path ? field("Database", h("code", {}, s.path)) : null,
    s.failure ? field("Failure", s.failure) : null));
}

// Draining stops claiming turns until corebox restarts, with no undo, so Drain asks
// first; a server already draining shows that instead of the button. Returns what tells
// it each fresh readiness.
function drainAction(target) {
  let control = null;
  let draining = null;
  const show = () => replace(target, draining
    ? h("span.muted", { dataset: { drain: "draining" } }, "Draining until corebox restarts: no new turn is claimed.")
    : control);
  if (signedIn().core) {
    supports("/core/v1/drain").then((supported) => {
      if (!supported) return;
      control = askFirst("drain", {
        label: "Drain",
        confirm: "Drain now",
        keep: "Keep serving",
        question: "No new turn is claimed until corebox restarts; running turns pause at a checkpoint.",
        run: async () => {
          await post("/core/v1/drain", {}, { "Idempotency-Key": idempotencyKey() });
          return "Draining: no new turn is claimed.";
        },
      });
      show();
    });
  }
  return (ready) => {
    const check = (ready.checks || {}).drain;  // as the readiness row reads it
    const now = Boolean(check && !check.ok);
    if (now !== draining) {
      draining = now;
      show();
    }
  };
}

export function render(main) {
  const actions = h("div.page-actions");
  const body = h("div.grid-2", {}, h("p.muted", {}, "Loading…"));
  const head = pageHead("Overview", "Is corebox ready, and what can its Runtimes do?");
  head.append(actions);
  main.append(head, body);
  const drained = drainAction(actions);
  let timer = null;
  let stopped = false;
  const load = async () => {
    try {
      const ready = await fetchReady();
      drained(ready);
      const [harnesses, active] = await Promise.all([
        get("/core/v1/harnesses").then((p) => p.data).catch(() => []),
        overlayList(ready),
      ]);
      if (stopped) return;
      replace(body,
        h("div.col", {}, h("div.status-line", {}, "corebox ", ready.version ? h("code", {}, ready.version) : null, " is ", badge(ready.status)),
          checks(ready), runtimes(ready), active ? overlays(active) : null, storage(ready)),
        h("div.col", {}, matrix(harnesses)));
    } catch (error) {
      if (!stopped) replace(body, failure(error));
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  };
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

async function fetchReady() {
  // /readyz answers 503 with its evidence when something is missing: show it all the same.
  const { status, body } = await look("/readyz");
  if (body && body.checks) return body;
  throw new Error(`/readyz answered ${status}`);
}

async function overlayList(ready) {
  if (Array.isArray(ready.overlays)) return ready.overlays;
  const check = (ready.checks || {}).overlays;
  if (check && Array.isArray(check.active)) return check.active;
  if (check && Array.isArray(check.overlays)) return check.overlays;
  if (!signedIn().core || !(await supports("/core/v1/overlays"))) return null;
  const page = await get("/core/v1/overlays").catch(() => null);
  return page ? page.data : null;
}
