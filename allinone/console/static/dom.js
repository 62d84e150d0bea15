// Small DOM helpers. Text from the server is always set as text, never parsed as HTML.

export function h(tag, attrs = {}, ...children) {
  const [head, ...classes] = tag.split(".");
  const [name, id] = head.split("#");
  const node = document.createElement(name || "div");
  if (id) node.id = id;
  if (classes.length) node.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      node.className = [node.className, value].filter(Boolean).join(" ");
    } else if (key === "dataset") {
      Object.assign(node.dataset, value);
    } else if (key === "style" && typeof value === "object") {
      Object.assign(node.style, value);
    } else if (value === true) {
      node.setAttribute(key, "");
    } else {
      node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function badge(status) {
  const value = status || "unknown";
  return h("span.badge", { dataset: { status: value } }, value.replace(/_/g, " "));
}

// Where a pause has a turn that has not ended, by its phase; its status says in_progress.
const HELD = { pause_requested: "pausing", pausing: "pausing", paused: "paused", resuming: "resuming" };
const ENDED = new Set(["completed", "failed", "cancelled"]);

/** A turn's state as a person reads it: paused, pausing or resuming while a pause holds
 * it, else its status. */
export function turnState(turn) {
  const held = HELD[(turn.x_corebox || {}).phase];
  return held && !ENDED.has(turn.status) ? held : turn.status;
}

export function when(seconds) {
  if (!seconds) return "—";
  const date = new Date(seconds * 1000);
  const age = Date.now() / 1000 - seconds;
  if (age < 45) return "just now";
  if (age < 3600) return `${Math.round(age / 60)} min ago`;
  if (age < 86400) return `${Math.round(age / 3600)} h ago`;
  return date.toLocaleDateString(undefined, { month: "short", day: "numeric", year: "numeric" });
}

export function stamp(seconds) {
  if (!seconds) return "—";
  return new Date(seconds * 1000).toLocaleString(undefined, {
    month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
}

export function short(id) {
  if (!id) return "—";
  const cut = id.indexOf("_");
  return cut > 0 && id.length > cut + 9 ? `${id.slice(0, cut + 1)}…${id.slice(-6)}` : id;
}

export function json(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

export function bytes(size) {
  if (size === null || size === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

export function field(label, value) {
  return [h("dt", {}, label), h("dd", {}, value === null || value === undefined ? "—" : value)];
}

export function pageHead(title, subtitle, ...actions) {
  return h("div.page-head", {},
    h("div", {}, h("h1", {}, title), subtitle ? h("p.subtitle", {}, subtitle) : null),
    actions.length ? h("div.page-actions", {}, actions) : null);
}

export function card(title, ...children) {
  return h("section.card", {}, title ? h("h2", {}, title) : null, children);
}

/** The page for something that is not there: what was not found, and a link back. */
export function notFound(what, href, back) {
  return h("div.not-found", {}, h("h1", {}, "Not found"), h("p", {}, what), h("p", {}, h("a", { href }, `Back to ${back}`)));
}

export function empty(text) {
  return h("p.empty", {}, text);
}

// What an error says: the API's message, else the thrown value as text.
function said(error) {
  return error && error.message ? error.message : String(error);
}

export function failure(error) {
  return h("p.notice.error", { role: "alert" }, said(error));
}

// An action with no undo asks once, in place, before it runs. `name` keys the buttons'
// data attribute (data-<name>=ask|confirm|keep); `question` says what the action does;
// `run` does it and returns what the status line then says. A failure is shown and the
// question stays, to try again or keep.
// `also`, when given ({ label, run }), is a second way to confirm (`data-<name>="also"`).
export function askFirst(name, { label, confirm, keep, question, run, also = null, small = false }) {
  const status = h("span.action-status.ask-status", { role: "status" });
  const size = small ? ".small" : "";
  const button = (step, text, onclick, style = "danger") =>
    h(`button.button.${style}${size}`, { type: "button", dataset: { [name]: step }, onclick }, text);
  const ask = button("ask", label, () => show(true), small ? "ghost" : "danger");
  const no = button("keep", keep, () => show(false), "ghost");
  const choices = [];
  const answer = (go) => async () => {
    for (const b of [...choices, no]) b.disabled = true;
    try {
      const done = await go();
      for (const b of [...choices, no]) b.hidden = true;
      status.textContent = done || "";
    } catch (error) {
      status.textContent = said(error);
      status.classList.add("error");
      for (const b of [...choices, no]) b.disabled = false;
    }
  };
  choices.push(button("confirm", confirm, answer(run)));
  if (also) choices.push(button("also", also.label, answer(also.run), "danger.also"));
  const box = h("span.ask-first", {}, ask, ...choices, no, status);
  const show = (asking) => {
    box.classList.toggle("asking", asking);
    ask.hidden = asking;
    for (const b of [...choices, no]) b.hidden = !asking;
    status.textContent = asking ? question : "";
    status.classList.remove("error");
  };
  show(false);
  return box;
}

export function table(columns, rows, { onRow, label } = {}) {
  const head = h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class }, c.title))));
  const body = h("tbody", {}, rows.map((row) => {
    const tr = h("tr", {}, columns.map((c) => h("td", { class: c.class, "data-label": c.title }, c.render(row))));
    if (onRow) {
      tr.classList.add("link-row");
      tr.tabIndex = 0;
      tr.addEventListener("click", () => onRow(row));
      tr.addEventListener("keydown", (event) => {
        if (event.key === "Enter") onRow(row);
      });
    }
    return tr;
  }));
  return h("div.table-wrap", {}, h("table.table", { "aria-label": label }, head, body));
}
