// The one place that talks to Core. Keys live in this module's memory only: never in a
// URL, a cookie or any browser storage. Each request picks the key its route needs.

const keys = { project: null, core: null };
const listeners = new Set();

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    const message = error.message || `HTTP ${status}`;
    // The field a refusal is about, when its message does not already name it.
    const field = error.param && !message.includes(error.param) ? ` Field: ${error.param}.` : "";
    super(message + field);
    this.status = status;
    this.param = error.param || null;
    this.code = error.code || null;
    this.type = error.type || null;
  }
}

export function signedIn() {
  return { project: keys.project !== null, core: keys.core !== null };
}

export function onKeysChange(listener) {
  listeners.add(listener);
}

// A key this tab held that corebox then refused (401: revoked, or its project archived) is
// forgotten at once, and the shell told, so that no page goes on asking with it.
const droppedListeners = new Set();
let dropped = "";

export function onKeyDropped(listener) {
  droppedListeners.add(listener);
}

/** Why a key was forgotten since the last call ("" when none was). */
export function droppedNotice() {
  const notice = dropped;
  dropped = "";
  return notice;
}

function refusedKey(response, key) {
  if (response.status !== 401 || !key) return;
  const kind = keys.project === key ? "project" : keys.core === key ? "Core" : null;
  if (kind === null) return; // a key being tried at sign-in, not one this tab holds
  if (kind === "project") keys.project = null;
  else keys.core = null;
  probes.clear();
  dropped = `corebox no longer accepts the ${kind} key this tab signed in with ` +
    "(it was revoked, or its project archived). Sign in again with a key that works.";
  listeners.forEach((fn) => fn());
  droppedListeners.forEach((fn) => fn());
}

export function signOut() {
  keys.project = null;
  keys.core = null;
  probes.clear();
  listeners.forEach((fn) => fn());
}

function keyFor(path) {
  if (path.startsWith("/core/v1/comms/")) return keys.project;
  if (path.startsWith("/core/v1/harnesses")) return keys.core || keys.project;
  if (path.startsWith("/core/v1/")) return keys.core;
  if (path.startsWith("/readyz") || path.startsWith("/healthz")) return keys.core || keys.project;
  return keys.project;
}

function headersFor(path, key, extra) {
  const headers = { ...extra };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (path.startsWith("/v1/agents") || path.startsWith("/v1/vaults")) {
    headers["OpenAI-Beta"] = "agents=v1";
  }
  return headers;
}

async function call(path, { method = "GET", body, key, headers, signal } = {}) {
  const init = { method, headers: headersFor(path, key, headers), signal, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  refusedKey(response, key);
  return response;
}

async function parse(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export async function request(path, options = {}) {
  return parse(await call(path, { ...options, key: keyFor(path) }));
}

export function get(path, signal) {
  return request(path, { signal });
}

export function post(path, body, headers) {
  return request(path, { method: "POST", body: body === undefined ? {} : body, headers });
}

export function del(path) {
  return request(path, { method: "DELETE" });
}

/** The status and decoded body, whatever the status (for answers such as /readyz's 503). */
export async function look(path) {
  const response = await call(path, { key: keyFor(path) });
  return { status: response.status, body: await response.json().catch(() => null) };
}

/** The response itself (for downloads), with the right key. */
export async function raw(path) {
  const response = await call(path, { key: keyFor(path) });
  if (!response.ok) throw new ApiError(response.status, null);
  return response;
}

/** Which kind of key `key` is: "core", "project", or null when Core refuses it. */
export async function signIn(key) {
  const trimmed = key.trim();
  if (!trimmed) return null;
  if ((await call("/core/v1/projects?limit=1", { key: trimmed })).ok) {
    keys.core = trimmed;
  } else if ((await call("/v1/agents?limit=1", { key: trimmed })).ok) {
    keys.project = trimmed;
  } else {
    return null;
  }
  probes.clear();
  listeners.forEach((fn) => fn());
  return keys.core === trimmed ? "core" : "project";
}

// Whether a route exists on this server, asked once per route: a GET to it answers 404
// `unsupported_operation` only when no route has that path (a POST-only route answers
// 405, an unknown resource 404 with another code).
const probes = new Map();

export function supports(path) {
  if (!probes.has(path)) {
    const asked = call(path, { key: keyFor(path) })
      .then(async (response) => {
        if (response.status !== 404) return true;
        const body = await response.json().catch(() => null);
        return !(body && body.error && body.error.code === "unsupported_operation");
      })
      .catch(() => false);
    probes.set(path, asked);
  }
  return probes.get(path);
}

/**
 * Read a server-sent event stream with fetch (EventSource cannot send headers). Calls
 * `onEvent(object)` for each JSON event and `onOpen()` once the stream is connected;
 * returns a promise that settles when the stream ends or `signal` aborts it.
 */
export async function stream(path, { signal, onEvent, onOpen }) {
  const response = await call(path, { key: keyFor(path), signal, headers: { Accept: "text/event-stream" } });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let opened = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!opened) {
        opened = true;
        if (onOpen) await onOpen();
      }
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (!data || data === "[DONE]") continue;
      try {
        onEvent(JSON.parse(data));
      } catch (error) {
        console.error("console: an event could not be shown", error);
      }
    }
  }
}

export function idempotencyKey() {
  // getRandomValues works outside secure contexts too (a console opened by LAN address).
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "console-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
