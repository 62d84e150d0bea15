// Automations with their invocations: pause, resume, run now.

import { get, post } from "../api.js";
import { badge, card, empty, failure, h, pageHead, replace, short, stamp, when } from "../dom.js";

function invocations(automation) {
  const box = h("div.invocations", {}, h("p.muted", {}, "Loading invocations…"));
  get(`/v1/agents/automations/${automation.id}/invocations?limit=20&order=desc`).then((page) => {
    replace(box, page.data.length ? h("ul.plain", {}, page.data.map((inv) => h("li.invocation", {},
      badge(inv.status), " ",
      inv.session_id ? h("a", { href: `#/sessions/${inv.session_id}` }, short(inv.session_id)) : h("code", {}, short(inv.id)),
      h("span.muted", {}, ` · ${(inv.source && inv.source.type) || ""} · ${stamp(inv.created_at)}`))))
      : empty("Never invoked."));
  }).catch((error) => replace(box, failure(error)));
  return box;
}

function automationCard(automation, reload) {
  const status = h("span.action-status");
  const act = (path, body) => async () => {
    status.textContent = "…";
    try {
      await post(`/v1/agents/automations/${automation.id}${path}`, body);
      reload();
    } catch (error) {
      status.textContent = error.message;
    }
  };
  const paused = automation.status === "paused";
  const trigger = automation.trigger || automation;
  const schedule = trigger.expression ? `${trigger.expression} (${trigger.timezone || "UTC"})`
    : trigger.run_at ? `once at ${stamp(trigger.run_at)}` : automation.type || "";
  return card(null,
    h("div.row-head", {}, h("h2", {}, automation.name || short(automation.id)), badge(automation.status)),
    h("p.muted", {}, schedule, automation.next_run_at ? ` · next ${stamp(automation.next_run_at)}` : "",
      ` · updated ${when(automation.updated_at || automation.created_at)}`),
    h("div.action-buttons", {},
      h("button.button.secondary", { type: "button", onclick: act("/invocations", {}) }, "Run now"),
      paused
        ? h("button.button.primary", { type: "button", onclick: act("/resume", {}) }, "Resume")
        : h("button.button.ghost", { type: "button", onclick: act("/pause", {}) }, "Pause"),
      status),
    h("h3", {}, "Invocations"), invocations(automation));
}

export function render(main) {
  const list = h("div", {}, h("p.muted", {}, "Loading…"));
  main.append(pageHead("Automations", "Scheduled and one-off runs, with what each invocation started."), list);
  const load = () => get("/v1/agents/automations?limit=100").then((page) => {
    replace(list, page.data.length ? h("div.stack", {}, page.data.map((a) => automationCard(a, load)))
      : empty("No automations. Create one with client.beta.agents.automations.create(...)."));
  }).catch((error) => replace(list, failure(error)));
  load();
}
