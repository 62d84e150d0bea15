// Agents: the list, and one agent's configuration, versions and deployment pointers
// (promote and rollback where the server supports them).

import { ApiError, get, post, supports } from "../api.js";
import { badge, card, empty, failure, field, h, json, notFound, pageHead, replace, short, stamp, table, when } from "../dom.js";

export function render(main) {
  const list = h("div", {}, h("p.muted", {}, "Loading…"));
  main.append(pageHead("Agents", "Saved agents of this project."), list);
  get("/v1/agents?limit=100&order=desc").then((page) => {
    replace(list, page.data.length ? table([
      { title: "Agent", render: (a) => h("div.cell-main", {}, h("strong", {}, a.name || short(a.id)), h("code.muted", {}, a.id)) },
      { title: "Model", render: (a) => h("code", {}, a.model) },
      { title: "Version", class: "num", render: (a) => (a.x_corebox && a.x_corebox.version) || "—" },
      { title: "Updated", class: "num", render: (a) => when(a.updated_at || a.created_at) },
    ], page.data, { label: "Agents", onRow: (a) => { location.hash = `#/agents/${a.id}`; } })
      : empty("No saved agents. Create one with client.beta.agents.create(...)."));
  }).catch((error) => replace(list, failure(error)));
}

function configuration(agent) {
  const tools = agent.tools || [];
  return card("Configuration",
    h("dl.facts", {},
      field("Model", h("code", {}, agent.model)),
      field("Name", agent.name),
      field("Reasoning", agent.reasoning && agent.reasoning.effort),
      field("Tools", tools.length ? tools.map((t) => t.name || t.server_label || t.type).join(", ") : "none"),
      field("Created", stamp(agent.created_at))),
    agent.instructions ? h("div", {}, h("h3", {}, "Instructions"), h("pre.prose", {}, agent.instructions)) : null,
    h("details", {}, h("summary", {}, "Full configuration"), h("pre.code", {}, json(agent))));
}

async function versions(agentId) {
  if (!(await supports(`/x/v1/agents/${agentId}/versions`))) return null;
  try {
    const page = await get(`/x/v1/agents/${agentId}/versions?limit=50`);
    return card("Versions", page.data.length ? table([
      { title: "Version", class: "num", render: (v) => v.version ?? v.number },
      { title: "Model", render: (v) => h("code", {}, (v.agent || v.config || v).model || "—") },
      { title: "Created", class: "num", render: (v) => when(v.created_at) },
    ], page.data, { label: "Versions" }) : empty("No versions."));
  } catch (error) {
    return card("Versions", failure(error));
  }
}

function deploymentRow(agentId, d, reload) {
  const target = h("input.input.small", { type: "number", min: 1, value: d.version, "aria-label": `Version for ${d.name}` });
  const status = h("span.action-status");
  const act = (kind) => async () => {
    status.textContent = "…";
    try {
      const body = kind === "promote"
        ? { version: Number(target.value), expected_pointer_version: d.pointer_version ?? null }
        : { version: null, expected_pointer_version: d.pointer_version ?? null };
      await post(`/x/v1/agents/${agentId}/deployments/${encodeURIComponent(d.name)}/${kind}`, body);
      reload();
    } catch (error) {
      status.textContent = error.message;
    }
  };
  return h("div.deployment", {},
    h("div", {}, h("strong", {}, d.name), " → version ", h("strong", {}, d.version),
      h("span.muted", {}, ` · pointer v${d.pointer_version} · ${when(d.updated_at)}`)),
    h("div.action-buttons", {}, target,
      h("button.button.primary", { type: "button", onclick: act("promote") }, "Promote"),
      h("button.button.ghost", { type: "button", onclick: act("rollback") }, "Roll back"), status));
}

async function deployments(agentId, reload) {
  if (!(await supports(`/x/v1/agents/${agentId}/deployments`))) return null;
  try {
    const found = await get(`/x/v1/agents/${agentId}/deployments`);
    const list = Array.isArray(found) ? found : found.data || [];
    return card("Deployments", list.length ? list.map((d) => deploymentRow(agentId, d, reload)) : empty("No deployment pointer yet."));
  } catch (error) {
    return card("Deployments", failure(error));
  }
}

export function renderOne(main, params) {
  const agentId = params[0];
  const body = h("div", {}, h("p.muted", {}, "Loading…"));
  main.append(body);
  const load = async () => {
    try {
      const agent = await get(`/v1/agents/${agentId}`);
      const version = agent.x_corebox && agent.x_corebox.version;
      const extra = await Promise.all([deployments(agentId, load), versions(agentId)]);
      replace(body,
        h("div.crumbs", {}, h("a", { href: "#/agents" }, "Agents"), " / ", short(agent.id)),
        pageHead(agent.name || "Agent", agent.id, version ? badge(`version ${version}`) : null),
        h("div.grid-2", {}, h("div.col", {}, configuration(agent)), h("div.col", {}, extra.filter(Boolean))));
    } catch (error) {
      replace(body, error instanceof ApiError && error.status === 404
        ? notFound(`No agent ${agentId} in this project.`, "#/agents", "Agents") : failure(error));
    }
  };
  load();
}
