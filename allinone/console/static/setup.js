// Environment set-up progress: one line (a bar and a sentence) drawn from the
// environment's `x_corebox.setup`, refreshed while the environment is still pending.

import { get } from "./api.js";
import { h, replace } from "./dom.js";

const REFRESH_MS = 1000;

/** What set-up is doing now, in words (`environment` tells when there is none). */
export function describe(setup, environment = null) {
  if (!setup && environment && (environment.type !== "openai_hosted" || environment.status !== "pending")) return "—";
  if (!setup) return "Waiting to start set-up";
  const step = `${Math.min(setup.done + 1, setup.total)} of ${setup.total}`;
  switch (setup.phase) {
    case "creating": return "Creating the workspace";
    case "installing": return `Installing ${setup.package} (${setup.kind} package ${step})`;
    case "running_setup": return `Running setup command ${step}`;
    case "done": return "Set-up done";
    case "failed": return `Set-up failed${setup.package ? ` at ${setup.package}` : ""}: ${setup.failure || "unknown reason"}`;
    default: return setup.phase;
  }
}

/** The line for an environment: a progress bar while it sets up, the outcome after. */
export function setupLine(environment) {
  const setup = (environment.x_corebox || {}).setup;
  if (!setup && environment.status !== "pending") return h("span.setup-none");  // nothing set up
  const phase = environment.status === "pending" ? (setup ? setup.phase : "pending") : (setup ? setup.phase : environment.status);
  const running = environment.status === "pending";
  const value = setup && setup.total ? setup.done : null;
  const bar = running
    ? h("progress.setup-bar", { max: setup && setup.total ? setup.total : null, value, "aria-label": "Set-up progress" })
    : null;
  return h("div.setup-line", { role: "status", dataset: { phase } }, bar, h("span.setup-text", {}, describe(setup, environment)));
}

/** Keep `box` showing the set-up line of `environmentId` until it is no longer pending;
 * `onSettled(environment)` is told once it is. Returns a function that stops watching. */
export function watchSetup(environmentId, box, onSettled = () => {}) {
  let timer = null;
  let stopped = false;
  const load = async () => {
    try {
      const environment = await get(`/v1/agents/environments/${environmentId}`);
      if (stopped) return;
      replace(box, setupLine(environment));
      if (environment.status !== "pending") {
        onSettled(environment);
        return;
      }
    } catch (error) {
      if (stopped) return;
      replace(box, h("span.error", {}, error.message));
    }
    timer = setTimeout(load, REFRESH_MS);
  };
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
