// The console's shell: sign-in, navigation and a hash router. Each page module exports
// `render(main, params)` and may return a function that stops what it started.

import { droppedNotice, onKeyDropped, onKeysChange, signIn, signOut, signedIn } from "./api.js";
import { h, notFound, replace } from "./dom.js";
import * as agents from "./pages/agents.js";
import * as automations from "./pages/automations.js";
import * as contacts from "./pages/contacts.js";
import * as environments from "./pages/environments.js";
import * as overview from "./pages/overview.js";
import * as owner from "./pages/owner.js";
import * as session from "./pages/session.js";
import * as sessions from "./pages/sessions.js";

const PAGES = [
  { path: "overview", title: "Overview", module: overview, needs: "any" },
  { path: "sessions", title: "Sessions", module: sessions, needs: "project" },
  { path: "agents", title: "Agents", module: agents, needs: "project" },
  { path: "environments", title: "Environments", module: environments, needs: "project" },
  { path: "automations", title: "Automations", module: automations, needs: "project" },
  { path: "contacts", title: "Contacts", module: contacts, needs: "project" },
  { path: "owner", title: "Owner", module: owner, needs: "core" },
];
const DETAIL = { sessions: session, agents, environments };

const main = document.getElementById("main");
const sidebar = document.getElementById("sidebar");
const app = document.getElementById("app");
const menuToggle = document.getElementById("menu-toggle");
let stop = null;

function allowed(page) {
  const keys = signedIn();
  if (page.needs === "any") return keys.project || keys.core;
  return keys[page.needs];
}

function drawNav(current) {
  const keys = signedIn();
  const links = PAGES.map((page) => {
    const usable = allowed(page);
    return h("a.nav-link", {
      href: `#/${page.path}`,
      "aria-current": page.path === current ? "page" : null,
      class: usable ? null : "locked",
      title: usable ? null : `Needs a ${page.needs === "core" ? "Core" : "project"} key`,
    }, page.title);
  });
  const status = h("div.nav-keys", {},
    h("div.key-line", {}, h("span.dot", { dataset: { on: String(keys.project) } }), "Project key"),
    h("div.key-line", {}, h("span.dot", { dataset: { on: String(keys.core) } }), "Core key"),
    h("div.nav-buttons", {},
      !keys.project || !keys.core ? h("a.small-link", { href: "#/signin" }, "Add a key") : null,
      h("button.small-link", { type: "button", onclick: () => { signOut(); location.hash = "#/signin"; } }, "Sign out")));
  replace(sidebar, h("div.nav-links", {}, links), status);
  const who = document.getElementById("who");
  who.textContent = keys.core && keys.project ? "project + owner" : keys.core ? "owner" : "project";
}

function signInPage() {
  const input = h("input#key", {
    type: "password", autocomplete: "off", spellcheck: "false", required: true,
    placeholder: "Paste a project key or the Core key", "aria-label": "Key",
  });
  const error = h("p.notice.error", { role: "alert", hidden: true });
  const button = h("button.button.primary", { type: "submit" }, "Sign in");
  const form = h("form.signin-form", {
    onsubmit: async (event) => {
      event.preventDefault();
      button.disabled = true;
      error.hidden = true;
      try {
        const kind = await signIn(input.value);
        input.value = "";
        if (kind === null) {
          error.textContent = "corebox did not accept this key.";
          error.hidden = false;
          return;
        }
        location.hash = kind === "core" && !signedIn().project ? "#/overview" : "#/sessions";
      } catch (exc) {
        error.textContent = `Could not reach corebox: ${exc.message}`;
        error.hidden = false;
      } finally {
        button.disabled = false;
      }
    },
  }, h("label.label", { for: "key" }, "Key"), input, error, button);
  const keys = signedIn();
  const notice = droppedNotice();
  replace(main, h("div.signin", {},
    h("div.signin-card", {},
      h("img", { src: "/console/mark.svg", alt: "", width: 40, height: 40 }),
      h("h1", {}, keys.project || keys.core ? "Add a key" : "Sign in to corebox"),
      notice ? h("p.notice.error.key-dropped", { role: "alert" }, notice) : null,
      h("p.subtitle", {},
        "A project key shows that project's sessions, agents and automations; the Core key " +
        "(printed at first start, in the data directory's secrets) opens the owner pages. " +
        "The key stays in this tab's memory and is sent only to this server."),
      form)));
  input.focus();
}

function route() {
  if (stop) {
    stop();
    stop = null;
  }
  setMenu(false);
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const keys = signedIn();
  const signed = keys.project || keys.core;
  app.dataset.state = signed ? "ready" : "signin";
  if (!signed || parts[0] === "signin") {
    main.dataset.page = "signin";
    if (signed) drawNav("");
    signInPage();
    return;
  }
  const named = PAGES.find((p) => p.path === parts[0]);
  if (parts.length && (!named || (parts.length > 1 && !DETAIL[named.path]))) {
    // A route the console has no page for: say so, with the way to the nearest page.
    const near = named || PAGES[keys.project ? 1 : 0];
    drawNav(named ? named.path : "");
    main.dataset.page = "not-found";
    replace(main, notFound(`The console has no page ${location.hash}.`, `#/${near.path}`, near.title));
    return;
  }
  const page = named || PAGES[keys.project ? 1 : 0];
  drawNav(page.path);
  main.dataset.page = page.path;
  if (!allowed(page)) {
    replace(main, h("div.locked-page", {}, h("h1", {}, page.title),
      h("p", {}, `This page needs a ${page.needs === "core" ? "Core" : "project"} key. `,
        h("a", { href: "#/signin" }, "Add one"), ".")));
    return;
  }
  const detail = parts.length > 1 ? DETAIL[page.path] : null;
  const module = detail || page.module;
  const render = detail && detail.renderOne ? detail.renderOne : module.render;
  main.replaceChildren();
  const result = render(main, parts.slice(1));
  if (typeof result === "function") stop = result;
  main.focus({ preventScroll: true });
}

// The phone-width menu: open or closed, as its button says (aria-expanded).
function setMenu(open) {
  app.classList.toggle("nav-open", open);
  menuToggle.setAttribute("aria-expanded", String(open));
}

menuToggle.addEventListener("click", () => setMenu(!app.classList.contains("nav-open")));
window.addEventListener("hashchange", route);
onKeysChange(() => {});
// A key corebox stopped accepting: the sign-in page says so (and the page that used it
// stops, as at any navigation).
onKeyDropped(() => {
  if (location.hash === "#/signin") route();
  else location.hash = "#/signin";
});
route();
