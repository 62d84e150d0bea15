// Agent-to-agent messaging (protocol 1.4): the roles of this project and their instances.
// Conversations are read by each instance with its own runtime token, not a project key.

import { get } from "../api.js";
import { badge, card, empty, failure, h, pageHead, replace, short, when } from "../dom.js";

function instances(role) {
  const box = h("div", {}, h("p.muted", {}, "Loading…"));
  get(`/core/v1/comms/roles/${role.id}/instances`).then((page) => {
    replace(box, page.data.length ? h("ul.plain", {}, page.data.map((i) => h("li.runtime", {},
      h("strong", {}, i.name), i.is_primary ? badge("primary") : null,
      h("code.muted", {}, short(i.id)),
      h("span.muted", {}, `cursor ${i.cursor ?? "—"} · ${when(i.created_at)}`))))
      : empty("No instances."));
  }).catch((error) => replace(box, failure(error)));
  return box;
}

export function render(main) {
  const list = h("div", {}, h("p.muted", {}, "Loading…"));
  main.append(pageHead("Contacts", "Agent-to-agent roles and their running instances."), list);
  get("/core/v1/comms/roles").then((page) => {
    replace(list, page.data.length ? h("div.grid-2", {}, page.data.map((role) => card(role.name || short(role.id),
      h("p.muted", {}, h("code", {}, role.id), role.agent_id ? h("span", {}, " · agent ", h("a", { href: `#/agents/${role.agent_id}` }, short(role.agent_id))) : null,
        role.primary_epoch ? ` · primary epoch ${role.primary_epoch}` : ""),
      role.description ? h("p", {}, role.description) : null,
      h("h3", {}, "Instances"), instances(role))))
      : empty("No roles yet. Roles and contacts are created through /core/v1/comms and protocol 1.4."));
  }).catch((error) => replace(list, failure(error)));
}
