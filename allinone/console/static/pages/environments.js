// Environments: the list with each one's set-up, and one environment with a live
// set-up line (package n of N) while it is being set up, and its files.

import { ApiError, get } from "../api.js";
import { badge, card, empty, failure, field, h, notFound, pageHead, replace, short, table } from "../dom.js";
import { describe, watchSetup } from "../setup.js";

const REFRESH_MS = 2000;

export function render(main) {
  const list = h("div", {}, h("p.muted", {}, "Loading…"));
  main.append(pageHead("Environments", "Managed workspaces of this project and how far their set-up is."), list);
  let timer = null;
  let stopped = false;
  const load = async () => {
    try {
      const page = await get("/v1/agents/environments?limit=100&order=desc");
      if (stopped) return;
      replace(list, page.data.length ? table([
        { title: "Environment", render: (e) => h("code", {}, e.id) },
        { title: "Type", render: (e) => e.type.replace(/_/g, " ") },
        { title: "Status", render: (e) => badge(e.status) },
        { title: "Set-up", render: (e) => h("span.setup-text", {}, describe((e.x_corebox || {}).setup, e)) },
      ], page.data, { label: "Environments", onRow: (e) => { location.hash = `#/environments/${e.id}`; } })
        : empty("No environments yet. Sessions with an openai_hosted environment create one."));
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

function facts(environment) {
  const files = environment.files || [];
  return card("Environment",
    h("dl.facts", {},
      field("Type", environment.type.replace(/_/g, " ")),
      field("Status", badge(environment.status)),
      field("Files", files.length ? files.map((f) => f.path).join(", ") : "none")));
}

export function renderOne(main, params) {
  const environmentId = params[0];
  const head = h("div", {}, h("p.muted", {}, "Loading…"));
  const setupBox = h("div.setup-box");
  const body = h("div");
  main.append(head, setupBox, body);
  const draw = (environment) => {
    replace(head,
      h("div.crumbs", {}, h("a", { href: "#/environments" }, "Environments"), " / ", short(environment.id)),
      pageHead("Environment", environment.id, badge(environment.status)));
    replace(body, facts(environment));
  };
  let stopWatch = () => {};
  get(`/v1/agents/environments/${environmentId}`).then((environment) => {
    draw(environment);
    stopWatch = watchSetup(environmentId, setupBox, draw);
  }).catch((error) => {
    if (error instanceof ApiError && error.status === 404) {
      replace(main, notFound(`No environment ${environmentId} in this project.`, "#/environments", "Environments"));
    } else {
      replace(head, failure(error));
    }
  });
  return () => stopWatch();
}
