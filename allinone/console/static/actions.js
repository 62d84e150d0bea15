// Required actions answered in the page: a permission request (approve or deny), a user
// choice (pick options, or dismiss), a function call (type its result).

import { post } from "./api.js";
import { h, json } from "./dom.js";

function sender(sessionId) {
  return async (event, controls, status) => {
    controls.forEach((control) => { control.disabled = true; });
    status.textContent = "Sending…";
    status.className = "action-status";
    try {
      await post(`/v1/agents/sessions/${sessionId}/events`, { events: [event] });
      status.textContent = "Sent: waiting for the agent…";
      const shown = status.closest(".action");
      if (shown) shown.dataset.sent = "true";
    } catch (error) {
      status.textContent = error.message;
      status.className = "action-status error";
      controls.forEach((control) => { control.disabled = false; });
    }
  };
}

function permission(action, send) {
  const request = action.request || {};
  const status = h("span.action-status", { role: "status" });
  const decide = (decision) => () => send({
    type: "agent.session.input.mcp_approval_request_result",
    request_id: action.request_id,
    response: { type: "mcp_tool_call", decision },
  }, [approve, deny], status);
  const approve = h("button.button.approve", { type: "button", onclick: decide("approve") }, "Approve");
  const deny = h("button.button.deny", { type: "button", onclick: decide("deny") }, "Deny");
  const args = request.arguments && Object.keys(request.arguments).length ? request.arguments : null;
  return h("div.action.permission", { dataset: { action: "permission", requestId: action.request_id } },
    h("div.action-kind", {}, "Permission requested"),
    h("div.action-title", {}, request.message || "The agent asks for permission."),
    h("div.action-detail", {}, "Tool ", h("code", {}, request.name || "—"),
      request.server_label ? ` on ${request.server_label}` : ""),
    args ? h("pre.code", {}, json(args)) : null,
    h("div.action-buttons", {}, approve, deny, status));
}

function question(q, chosen) {
  const picked = new Set();
  chosen.set(q.id, picked);
  const multi = Boolean(q.multi_select || q.multiple || q.allow_multiple);
  const buttons = (q.options || []).map((option) => {
    const button = h("button.option", { type: "button", "aria-pressed": "false", dataset: { label: option.label } },
      option.label, option.description ? h("span.option-note", {}, option.description) : null);
    button.addEventListener("click", () => {
      if (!multi) {
        picked.clear();
        buttons.forEach((b) => b.setAttribute("aria-pressed", "false"));
      }
      if (picked.has(option.label)) {
        picked.delete(option.label);
        button.setAttribute("aria-pressed", "false");
      } else {
        picked.add(option.label);
        button.setAttribute("aria-pressed", "true");
      }
    });
    return button;
  });
  return h("fieldset.question", {},
    h("legend", {}, q.question || q.header || "Choose", multi ? h("span.muted", {}, " (one or more)") : null),
    h("div.options", {}, buttons));
}

function choice(action, send) {
  const chosen = new Map();
  const questions = (action.questions || []).map((q) => question(q, chosen));
  const status = h("span.action-status", { role: "status" });
  const submit = h("button.button.primary", {
    type: "button",
    onclick: () => {
      const answers = [...chosen].filter(([, picked]) => picked.size)
        .map(([id, picked]) => ({ question_id: id, answers: [...picked] }));
      if (!answers.length) {
        status.textContent = "Pick an option first.";
        return;
      }
      send({ type: "x_corebox.input.user_choice", ask_id: action.ask_id, question_answers: answers },
        [submit, dismiss], status);
    },
  }, "Send answer");
  const dismiss = h("button.button.ghost", {
    type: "button",
    onclick: () => send({ type: "x_corebox.input.user_choice", ask_id: action.ask_id, cancelled: true },
      [submit, dismiss], status),
  }, "Dismiss");
  return h("div.action.choice", { dataset: { action: "choice", askId: action.ask_id } },
    h("div.action-kind", {}, "The agent asks you to choose"),
    questions, h("div.action-buttons", {}, submit, dismiss, status));
}

function functionCall(action, send) {
  const output = h("textarea.input.mono", { rows: 4, placeholder: "The function's output (text or JSON)", "aria-label": "Function output" });
  const status = h("span.action-status", { role: "status" });
  const reply = (success) => () => send({
    type: "agent.session.input.tool_result",
    turn_id: action.turn_id,
    call_id: action.call_id,
    success,
    ...(success ? { output: output.value } : { error: output.value || "The function failed." }),
  }, [ok, fail], status);
  const ok = h("button.button.primary", { type: "button", onclick: reply(true) }, "Send result");
  const fail = h("button.button.ghost", { type: "button", onclick: reply(false) }, "Send as error");
  return h("div.action.function", { dataset: { action: "function", callId: action.call_id } },
    h("div.action-kind", {}, "Function call waiting for its result"),
    h("div.action-title", {}, h("code", {}, action.name)),
    h("pre.code", {}, json(action.arguments)),
    output, h("div.action-buttons", {}, ok, fail, status));
}

function other(action) {
  return h("div.action", {}, h("div.action-kind", {}, action.type.replace(/_/g, " ")), h("pre.code", {}, json(action)));
}

function card(action, send) {
  if (action.type === "mcp_approval_request") return permission(action, send);
  if (action.type === "x_corebox_user_choice") return choice(action, send);
  if (action.type === "function_call") return functionCall(action, send);
  return other(action);
}

function keyOf(action) {
  return action.request_id || action.ask_id || action.call_id || JSON.stringify(action);
}

/**
 * Show a card for every pending action of `session` in `box`. A card already shown stays
 * as it is (what the person has typed or picked is kept); cards of actions no longer
 * pending are removed.
 */
export function showActions(box, session) {
  const send = sender(session.id);
  const pending = [...(session.required_actions || []), ...((session.x_corebox || {}).required_actions || [])];
  const shown = new Map([...box.children].map((node) => [node.dataset.key, node]));
  const keep = new Set();
  for (const action of pending) {
    const key = keyOf(action);
    keep.add(key);
    if (!shown.has(key)) {
      const node = card(action, send);
      node.dataset.key = key;
      box.append(node);
    }
  }
  shown.forEach((node, key) => {
    if (!keep.has(key)) node.remove();
  });
}
