// The owner's pages (Core key): projects and their API keys, Runtime devices, overlays.

import { del, get, post, supports } from "../api.js";
import { askFirst, badge, card, empty, failure, h, pageHead, replace, short, table, when } from "../dom.js";

// A table row's action that asks first (`label` on both its buttons), then sends
// `request`, reloads the table and says `done`.
function askInRow(name, label, question, request, reload, done, also = null) {
  const after = (go) => async () => {
    const answer = await go();
    reload();
    return typeof done === "function" ? done(answer) : done;
  };
  return askFirst(name, {
    label, confirm: label, keep: "Keep", question, small: true, run: after(request),
    also: also && { label: also.label, run: after(also.request) },
  });
}

// A revoked key stops working at once and cannot be restored, so Revoke asks first.
function revoke(project, key, reload) {
  const question = `Revoke ${key.name || "this key"}? Clients using it are refused at once; it cannot be restored.`;
  const request = () => post(`/core/v1/projects/${project.id}/api_keys/${key.id}/revoke`, {});
  return askInRow("revoke", "Revoke", question, request, reload, "Revoked.");
}

// What removing an overlay changes, as the server applies each kind: a kill switch is
// read at every safe point (turns it paused stay paused, unless removed with "Remove and
// resume"); a disabled tool and an egress limit are pinned when a turn starts.
function lifted(overlay) {
  const { kind, value } = overlay;
  if (kind === "kill_switch") {
    const paused = value === "pause" ? " Turns it paused stay paused, unless you also resume them." : "";
    return `Remove this kill switch (${value})? New input is accepted and queued turns run again.${paused}`;
  }
  if (kind === "tool_disabled") return `Remove the block on ${value}? Turns that start from now on may call it.`;
  if (kind === "egress") return `Remove this egress limit (${value})? Turns that start from now on may connect beyond this machine.`;
  return `Remove this ${kind.replace(/_/g, " ")} overlay?`;
}

// Removing an overlay lifts a safety control, so Remove asks first; the record is kept,
// marked cleared.
// A pause kill switch can also be removed with the turns it paused resumed (each by a
// resume command; a turn someone paused again since is left as it is). The row is gone
// once the list reloads, so what a removal did is also told under the list (`tell`).
function removeOverlay(overlay, reload, tell) {
  const path = `/core/v1/overlays/${overlay.id}`;
  const request = () => del(path);
  const pauses = overlay.kind === "kill_switch" && overlay.value === "pause";
  const also = pauses ? { label: "Remove and resume", request: () => del(`${path}?resume=true`) } : null;
  // A resume a turn refused (it ended meanwhile, or moved) is said, not counted.
  const done = (answer) => {
    const sent = (answer && answer.resumed) || null;
    const turns = (n) => `${n} ${n === 1 ? "turn" : "turns"}`;
    const refused = sent ? sent.filter((c) => c.status === "rejected").length : 0;
    const not = refused ? `; ${turns(refused)} not resumed` : "";
    const text = sent ? `Removed; ${turns(sent.length - refused)} resumed${not}.` : "Removed.";
    const kind = overlay.kind.replace(/_/g, " ");
    tell(`${kind[0].toUpperCase()}${kind.slice(1)} (${overlay.value}): ${text}`);
    return text;
  };
  return askInRow("remove", "Remove", lifted(overlay), request, reload, done, also);
}

function keysOf(project) {
  const box = h("div", {}, h("p.muted", {}, "Loading keys…"));
  const issued = h("div");
  const load = () => get(`/core/v1/projects/${project.id}/api_keys?limit=100`).then((page) => {
    replace(box, page.data.length ? table([
      { title: "Key", render: (k) => h("div.cell-main", {}, h("strong", {}, k.name || "unnamed"), h("code.muted", {}, `${k.prefix || ""}…`)) },
      { title: "Status", render: (k) => badge(k.status) },
      { title: "Created", class: "num", render: (k) => when(k.created_at) },
      { title: "", class: "num", render: (k) => (k.status === "active" ? revoke(project, k, load) : "") },
    ], page.data, { label: `Keys of ${project.name}` }) : empty("No keys."));
  }).catch((error) => replace(box, failure(error)));
  const name = h("input.input", { placeholder: "New key name", "aria-label": "New key name" });
  const form = h("form.inline-form", {
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        const made = await post(`/core/v1/projects/${project.id}/api_keys`, name.value ? { name: name.value } : {});
        name.value = "";
        replace(issued, h("p.notice", {}, "New key (shown once, copy it now): ", h("code.secret", {}, made.key)));
        load();
      } catch (error) {
        replace(issued, failure(error));
      }
    },
  }, name, h("button.button.secondary", { type: "submit" }, "Issue key"));
  load();
  return [box, form, issued];
}

function projects(listed) {
  const box = h("div", {}, h("p.muted", {}, "Loading…"));
  listed.then((page) => {
    replace(box, page.data.map((p) => card(null,
      h("div.row-head", {}, h("h2", {}, p.name || short(p.id)), badge(p.status)),
      h("p.muted", {}, h("code", {}, p.id), ` · created ${when(p.created_at)}`),
      keysOf(p))));
  }).catch((error) => replace(box, failure(error)));
  return box;
}

function devices() {
  const box = h("div", {}, h("p.muted", {}, "Loading…"));
  get("/core/v1/devices?limit=100").then((page) => {
    replace(box, card("Devices", page.data.length ? table([
      { title: "Device", render: (d) => h("div.cell-main", {}, h("strong", {}, d.name || d.id), h("code.muted", {}, d.id)) },
      { title: "Status", render: (d) => badge(d.status) },
      { title: "Connected", render: (d) => badge(d.connected ? "connected" : "offline") },
      { title: "Created", class: "num", render: (d) => when(d.created_at) },
    ], page.data, { label: "Devices" }) : empty("No devices.")));
  }).catch((error) => replace(box, failure(error)));
  return box;
}

// The values each kind of overlay takes, as the server's request body states them (a
// console test holds these to `/openapi.json`), with what each does; a tool's name is
// typed instead.
const OVERLAY_VALUES = {
  kill_switch: [["pause", "pause: refuse input, pause turns"], ["cancel", "cancel: refuse input, cancel turns"]],
  egress: [["loopback_only", "loopback only: nothing beyond this machine"]],
};

// The Value field for `kind`: a choice of the values it takes, or a tool's name.
function overlayValue(kind) {
  const choices = OVERLAY_VALUES[kind];
  if (!choices) return h("input.input", { placeholder: "tool name or MCP server_label", "aria-label": "Value", required: true });
  return h("select.input", { "aria-label": "Value" }, choices.map(([value, label]) => h("option", { value }, label)));
}

function overlayForm(reload) {
  const kind = h("select.input", { "aria-label": "Kind" },
    ["kill_switch", "tool_disabled", "egress"].map((k) => h("option", { value: k }, k.replace(/_/g, " "))));
  const project = h("input.input", { placeholder: "proj_…", "aria-label": "Project", required: true });
  const agent = h("input.input", { placeholder: "agent_… (optional)", "aria-label": "Agent" });
  let value = overlayValue(kind.value);
  const showValue = () => {
    const field = overlayValue(kind.value);
    value.replaceWith(field);
    value = field;
  };
  kind.addEventListener("change", showValue);
  const reason = h("input.input", { placeholder: "reason", "aria-label": "Reason", required: true });
  const status = h("span.action-status");
  return h("form.inline-form.wrap", {
    "aria-label": "Add an overlay",
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        await post("/core/v1/overlays", {
          kind: kind.value, project_id: project.value, agent_id: agent.value || null, value: value.value.trim(), reason: reason.value,
        });
        status.textContent = "";
        event.target.reset();
        showValue();
        reload();
      } catch (error) {
        status.textContent = error.message;
      }
    },
  }, kind, project, agent, value, reason, h("button.button.danger", { type: "submit" }, "Add overlay"), status);
}

// An overlay's scope, under its kind: its project by name (the id on hover), and the
// agent it is narrowed to, if any. One line that wraps: the card is half the page wide.
function scope(overlay, names) {
  const { project_id: project, agent_id: agent } = overlay;
  const name = h("span", { title: project }, names.get(project) || short(project));
  const narrowed = agent ? [" · agent ", h("code", { title: agent }, short(agent))] : [];
  return h("span.muted", {}, name, ...narrowed);
}

// `listed`: the page's one read of the projects, whose names the overlays are shown with
// (a project it does not hold keeps its short id).
function overlays(listed) {
  const box = h("div");
  const named = listed.then((page) => new Map(page.data.map((p) => [p.id, p.name])), () => new Map());
  supports("/core/v1/overlays").then((supported) => {
    if (!supported) return;
    const list = h("div");
    const told = h("p.action-status.overlay-told", { role: "status" });
    const tell = (text) => { told.textContent = text; };
    const load = () => Promise.all([get("/core/v1/overlays"), named]).then(([page, names]) => {
      const data = Array.isArray(page) ? page : page.data || [];
      replace(list, data.length ? table([
        { title: "Overlay", render: (o) => h("div.cell-main", {}, badge(o.kind), h("code", {}, String(o.value)), scope(o, names)) },
        { title: "Reason", render: (o) => o.reason || "" },
        { title: "", class: "num", render: (o) => removeOverlay(o, load, tell) },
      ], data, { label: "Overlays" }) : empty("No overlay is active."));
    }).catch((error) => replace(list, failure(error)));
    replace(box, card("Overlays", list, told, overlayForm(load)));
    load();
  });
  return box;
}

export function render(main) {
  const listed = get("/core/v1/projects?limit=100");
  main.append(pageHead("Owner", "Projects, their keys, Runtime devices and safety overlays."),
    h("div.grid-2", {}, h("div.col", {}, h("h2.section-title", {}, "Projects"), projects(listed)),
      h("div.col", {}, devices(), overlays(listed))));
}
