// The agent-core web console: plain JavaScript over the server's public HTTP API.
//
// Everything shown here comes from the server or a model, so it is untrusted: it is put
// on the page with textContent and DOM calls only, never parsed as HTML. The token, when
// the server wants one, travels in the Authorization header of each fetch (never in a URL
// or a cookie, so the server's cross-site protections hold) and is kept in this tab's
// sessionStorage, which no other tab or site can read and which is gone with the tab.
"use strict";

const TOKEN_KEY = "agent-core-console-token";
const SETTINGS_KEY = "agent-core-console-settings";
const PAGE = 50;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  session: null,        // the open session as GET /v1/sessions/{id} returned it (or a turn's done event made it)
  ui: [],               // /v1/ui-schema elements for the current settings
  settings: {},         // per session: the config keys this client chose
  running: null,        // {rid, view} while a turn streams
  after: null,          // the last session id listed (for "More sessions")
  completions: [],
  active: -1,
};

// -- small DOM helpers ------------------------------------------------------------------

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "className") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

const $ = (id) => document.getElementById(id);

function pretty(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  return JSON.stringify(value, null, 2);
}

function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function notice(text, isError) {
  $("notice").textContent = text || "";
  $("notice").classList.toggle("error", Boolean(isError));
}

function problem(text) {
  notice(text, true);
}

// -- the HTTP API -------------------------------------------------------------------------

class ApiFailure extends Error {
  constructor(status, body) {
    const message = body && body.error && body.error.message ? body.error.message : `HTTP ${status}`;
    super(message);
    this.status = status;
  }
}

async function api(method, path, body, headers) {
  const sent = Object.assign({}, headers || {});
  if (state.token) sent.authorization = `Bearer ${state.token}`;
  if (body !== undefined) sent["content-type"] = "application/json";
  const response = await fetch(path, {
    method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
  });
  if (response.status === 401) {
    askForToken(state.token ? "The server refused that token." : "");
    throw new ApiFailure(401, null);
  }
  return response;
}

async function apiJson(method, path, body) {
  const response = await api(method, path, body);
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  if (!response.ok) throw new ApiFailure(response.status, data);
  return data;
}

function configQuery() {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(state.settings)) query.set(key, JSON.stringify(value));
  const text = query.toString();
  return text ? `?${text}` : "";
}

const sessionPath = (id) => `/v1/sessions/${encodeURIComponent(id)}`;

// -- auth ---------------------------------------------------------------------------------

function askForToken(why) {
  $("app").hidden = true;
  $("auth").hidden = false;
  $("auth-error").textContent = why || "";
  $("token").focus();
}

async function connect(event) {
  event.preventDefault();
  state.token = $("token").value.trim();
  $("token").value = "";
  sessionStorage.setItem(TOKEN_KEY, state.token);
  await start();
}

// -- paths and templates (seed 003: a dotted `data` path and a `{{data}}` template) -------

function walk(root, path) {
  let value = root;
  for (const part of String(path || "").split(".").filter(Boolean)) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, part)) {
      return undefined;
    }
    value = value[part];
  }
  return value === null ? undefined : value;
}

function shown(value) {
  if (value === undefined) return "?";
  if (typeof value === "number" && !Number.isInteger(value)) return String(Number(value.toFixed(6)));
  return typeof value === "string" ? value : JSON.stringify(value);
}

function filled(element, root) {
  const data = walk(root, element.data);
  if (data === undefined) return null;
  const text = typeof element.template === "string"
    ? element.template.replace(/\{\{\s*data((?:\.[A-Za-z0-9_]+)*)\s*\}\}/g, (_, path) => shown(walk(data, path)))
    : shown(data);
  return element.label ? `${element.label}: ${text}` : text;
}

function elementsOf(kind) {
  return state.ui.filter((e) => e.ui_type === kind);
}

function renderStatus() {
  const session = state.session ? { metadata: state.session.metadata || {}, messages: state.session.messages || [],
    session_id: state.session.id } : null;
  const parts = session ? elementsOf("status_bar").map((e) => filled(e, { session })).filter((t) => t) : [];
  $("status-bar").textContent = parts.join(" | ");
}

function footerOf(message) {
  const parts = elementsOf("message_footer").map((e) => filled(e, message)).filter((t) => t);
  return parts.length ? el("p", { className: "footer", text: parts.join(" · ") }) : null;
}

// -- the transcript ------------------------------------------------------------------------

const ROLE_NAMES = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };

function messageItem(role) {
  const body = el("div", { className: "content" });
  const item = el("li", { className: `msg ${role}` }, el("p", { className: "who", text: ROLE_NAMES[role] || role }),
    body);
  return { item, body };
}

function reasoningBlock(text) {
  const pre = el("pre", { className: "reasoning-text", text });
  return { node: el("details", { className: "reasoning" }, el("summary", { text: "Reasoning" }), pre), pre };
}

function toolCallBlock(call) {
  const fn = call.function || {};
  const name = fn.name || call.name || "tool";
  const result = el("div", { className: "tool-result", "aria-live": "polite" });
  const node = el("details", { className: "tool-call", open: true, "data-call-id": call.id || "" },
    el("summary", { text: `Tool call: ${name}` }),
    el("p", { className: "label", text: "Arguments" }),
    el("pre", { className: "arguments", text: pretty(fn.arguments !== undefined ? fn.arguments : call.payload) }),
    result);
  return { node, result };
}

function findCall(callId) {
  for (const node of $("transcript").querySelectorAll(".tool-call")) {
    if (node.getAttribute("data-call-id") === callId) return node.querySelector(".tool-result");
  }
  return null;
}

function showToolResult(message) {
  const meta = message.metadata || {};
  const decision = meta.tool_policy;
  const parts = [el("p", { className: "label", text: "Result" }),
    el("pre", { className: "tool-output", text: typeof message.content === "string" ? message.content
      : pretty(message.content) })];
  if (decision && typeof decision === "object") {
    parts.push(el("p", { className: "policy", text: `${decision.decision || "?"} by tool_policy (rule ${
      decision.rule || "?"})${decision.reason ? `: ${decision.reason}` : ""}` }));
  }
  const target = findCall(meta.tool_call_id);
  if (target) {
    target.replaceChildren(...parts);
    return;
  }
  const { item, body } = messageItem("tool");
  body.append(...parts);
  $("transcript").append(item);
}

function showMessage(message) {
  if (message.role === "tool") {
    showToolResult(message);
    return null;
  }
  const { item, body } = messageItem(message.role);
  const meta = message.metadata || {};
  if (typeof meta.reasoning === "string" && meta.reasoning) body.append(reasoningBlock(meta.reasoning).node);
  const text = typeof message.content === "string" ? message.content : pretty(message.content);
  if (text) body.append(el("p", { className: "text", text }));
  for (const call of Array.isArray(meta.tool_calls) ? meta.tool_calls : []) body.append(toolCallBlock(call).node);
  const footer = footerOf(message);
  if (footer) item.append(footer);
  $("transcript").append(item);
  return item;
}

function renderTranscript() {
  $("transcript").replaceChildren();
  for (const message of (state.session && state.session.messages) || []) showMessage(message);
}

// -- a streamed turn -------------------------------------------------------------------------

class TurnView {
  constructor(question) {
    this.question = question;
    this.live = new Map();  // iteration -> {item, text, reasoning}
  }

  bubble(iteration) {
    if (!this.live.has(iteration)) {
      const { item, body } = messageItem("assistant");
      item.classList.add("streaming");
      const text = el("p", { className: "text" });
      body.append(text);
      $("transcript").append(item);
      this.live.set(iteration, { item, body, text, reasoning: null });
    }
    return this.live.get(iteration);
  }

  partial(event) {
    const bubble = this.bubble(event.iteration);
    const message = event.message || {};
    const reasoning = (message.metadata || {}).reasoning;
    if (typeof reasoning === "string" && reasoning) {
      if (!bubble.reasoning) {
        bubble.reasoning = reasoningBlock("");
        bubble.body.prepend(bubble.reasoning.node);
      }
      bubble.reasoning.pre.textContent += reasoning;
    }
    if (typeof message.content === "string") bubble.text.textContent += message.content;
  }

  final(event) {
    const old = this.live.get(event.iteration);
    const item = showMessage(event.message || {});
    if (old) {
      if (item) old.item.replaceWith(item);
      else old.item.remove();
    }
    this.live.delete(event.iteration);
  }

  dropAll() {  // back to the session as it was, with the question asked again
    this.live.clear();
    renderTranscript();
    showMessage({ role: "user", content: this.question });
  }

  retract(event) {
    const old = this.live.get(event.iteration);
    if (old) old.item.remove();
    this.live.delete(event.iteration);
  }
}

function approvalBox(frame) {
  const status = el("p", { className: "approval-status", role: "status" });
  const box = el("div", { className: "approval", role: "group", "aria-label": `Approve ${frame.tool_name || "tool"}?` });
  const answer = async (decision) => {
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    try {
      await apiJson("POST", `/v1/requests/${encodeURIComponent(frame.request_id)}/approvals/${
        encodeURIComponent(frame.call_id)}`, { decision });
      status.textContent = decision === "allow" ? "Approved" : "Denied";
    } catch (error) {
      status.textContent = `Could not answer: ${error.message}`;
    }
  };
  const seconds = Number(frame.timeout_s);
  box.append(
    el("p", { className: "prompt", text: String(frame.prompt || "Allow this tool call?") }),
    el("p", { className: "why", text: `Asked by ${frame.plugin || "a plugin"}; without an answer within ${
      Number.isFinite(seconds) ? seconds : "?"} s it is ${frame.default === "allow" ? "allowed" : "denied"}.` }),
    el("pre", { className: "arguments", text: pretty(frame.payload) }),
    el("button", { type: "button", className: "approve", text: "Approve", onclick: () => answer("allow") }),
    el("button", { type: "button", className: "deny", text: "Deny", onclick: () => answer("deny") }),
    status);
  const target = findCall(frame.call_id);
  if (target) target.replaceChildren(box);
  else $("transcript").append(el("li", { className: "msg tool" }, box));
  box.querySelector("button.approve").focus();
}

function onFrame(view, frame) {
  switch (frame.type) {
    case "partial": view.partial(frame); break;
    case "final": view.final(frame); break;
    case "retract": view.retract(frame); notice("The upstream stream broke; asking again."); break;
    case "retrying": notice(`Retrying (attempt ${frame.attempt}): ${(frame.error || {}).message || ""}`); break;
    case "queued": notice("Another turn runs on this session; this one waits for it."); break;
    case "retry":  // another server saved the session first: the turn runs again on the new revision
      view.dropAll();
      notice("The session changed meanwhile; the turn runs again.");
      break;
    case "discarded": notice("A later turn rolled this one back; nothing of it was saved."); break;
    case "approval": approvalBox(frame); break;
    case "error": case "busy": case "conflict":
      problem(`Error: ${(frame.error || {}).message || frame.type}`); break;
    case "done":
      if (frame.session) {
        state.session = Object.assign({}, state.session, { messages: frame.session.messages,
          metadata: frame.session.metadata });
        renderTranscript();
        renderStatus();
      }
      if (frame.outcome && frame.outcome.reason === "cancelled") notice("The turn was cancelled.");
      break;
    case "saved":
      if (state.session) state.session.revision = frame.revision;
      break;
    default: break;
  }
}

async function readFrames(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data) {
        try { onData(JSON.parse(data)); } catch (error) { problem(`Unreadable event: ${error.message}`); }
      }
    }
  }
}

async function sendTurn(text) {
  if (!state.session) await createSession();
  const rid = newId();
  const view = new TurnView(text);
  state.running = { rid, view };
  setRunning(true);
  notice("");
  showMessage({ role: "user", content: text });
  try {
    const response = await api("POST", `${sessionPath(state.session.id)}/turns?approvals=ask`,
      { message: text, config: state.settings }, { "x-request-id": rid });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new ApiFailure(response.status, body);
    }
    await readFrames(response, (frame) => onFrame(view, frame));
  } catch (error) {
    if (error.status !== 401) problem(`Error: ${error.message}`);
  } finally {
    state.running = null;
    setRunning(false);
    await listSessions();
  }
}

function setRunning(on) {
  $("send").disabled = on;
  $("cancel").disabled = !on;
  $("transcript").setAttribute("aria-busy", on ? "true" : "false");
}

async function cancelTurn() {
  if (!state.running) return;
  try {
    await apiJson("DELETE", `/v1/requests/${encodeURIComponent(state.running.rid)}`);
  } catch (error) {
    if (error.status !== 404) problem(`Could not cancel: ${error.message}`);
  }
}

// -- sessions ---------------------------------------------------------------------------------

async function listSessions(more) {
  const after = more && state.after ? `&after=${encodeURIComponent(state.after)}` : "";
  const page = await apiJson("GET", `/v1/sessions?limit=${PAGE}${after}`);
  if (!more) $("session-list").replaceChildren();
  for (const head of page.data) {
    const current = state.session && state.session.id === head.id;
    const button = el("button", { type: "button", className: "open", "aria-current": current ? "true" : null,
      onclick: () => openSession(head.id) },
    el("span", { className: "id", text: head.id }),
    el("span", { className: "meta", text: `${head.message_count} messages, ${head.updated_at}` }));
    $("session-list").append(el("li", {}, button));
  }
  state.after = page.data.length ? page.data[page.data.length - 1].id : state.after;
  $("more-sessions").hidden = page.data.length < PAGE;
}

function loadSettings(id) {
  try {
    const all = JSON.parse(sessionStorage.getItem(SETTINGS_KEY) || "{}");
    return all && typeof all[id] === "object" && all[id] ? all[id] : {};
  } catch { return {}; }
}

function saveSettings() {
  if (!state.session) return;
  let all = {};
  try { all = JSON.parse(sessionStorage.getItem(SETTINGS_KEY) || "{}") || {}; } catch { all = {}; }
  all[state.session.id] = state.settings;
  sessionStorage.setItem(SETTINGS_KEY, JSON.stringify(all));
}

async function openSession(id, carried) {
  try {
    state.session = await apiJson("GET", sessionPath(id));
  } catch (error) {
    problem(`Could not open ${id}: ${error.message}`);
    return;
  }
  state.settings = loadSettings(id);
  if (carried && !Object.keys(state.settings).length) {  // settings chosen before the session existed
    state.settings = carried;
    saveSettings();
  }
  $("chat-title").textContent = `Session ${state.session.id}`;
  $("export-session").disabled = false;
  $("delete-session").disabled = false;
  notice("");
  await refreshPlugins();
  renderTranscript();
  renderStatus();
  await listSessions();
  $("message").focus();
}

async function createSession() {
  const made = await apiJson("POST", "/v1/sessions", {});
  await openSession(made.id, state.session ? null : state.settings);
}

async function deleteSession() {
  if (!state.session || !window.confirm(`Delete session ${state.session.id}? This cannot be undone.`)) return;
  try {
    await apiJson("DELETE", sessionPath(state.session.id));
  } catch (error) {
    problem(`Could not delete: ${error.message}`);
    return;
  }
  notice(`Deleted session ${state.session.id}.`);
  state.session = null;
  $("chat-title").textContent = "No session open";
  $("export-session").disabled = true;
  $("delete-session").disabled = true;
  $("transcript").replaceChildren();
  $("session-actions").replaceChildren();
  renderStatus();
  await listSessions();
  $("new-session").focus();
}

async function exportSession() {
  if (!state.session) return;
  const data = await apiJson("GET", sessionPath(state.session.id));
  const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
  const link = el("a", { href: url, download: `session-${state.session.id}.json`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// -- what plugins contribute: settings, actions, plugins --------------------------------------

async function refreshPlugins() {
  const query = configQuery();
  try {
    const [ui, plugins, actions] = await Promise.all([
      apiJson("GET", `/v1/ui-schema${query}`), apiJson("GET", `/v1/plugins${query}`),
      apiJson("GET", `/v1/actions${query}`)]);
    state.ui = ui.data;
    renderSettings();
    renderPlugins(plugins);
    renderActions(actions.data);
    renderStatus();
  } catch (error) {
    if (error.status !== 401) problem(`Settings: ${error.message}`);
  }
}

function settingId(key) {
  return `setting-${String(key).replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function controlFor(element, id, value) {
  const type = element.type || "text";
  if (type === "checkbox") return el("input", { id, type: "checkbox", checked: value === true });
  if (type === "select") {
    const select = el("select", { id });
    for (const option of Array.isArray(element.options) ? element.options : []) {
      const v = option && typeof option === "object" ? option.value : option;
      const label = option && typeof option === "object" ? option.label || option.value : option;
      select.append(el("option", { value: String(v), text: String(label), selected: String(v) === String(value) }));
    }
    return select;
  }
  if (type === "textarea" || type === "json") {
    const shownValue = type === "json" ? (value === undefined ? "" : JSON.stringify(value)) : value;
    const area = el("textarea", { id, rows: 3 });
    area.value = shownValue === undefined ? "" : String(shownValue);
    return area;
  }
  const input = el("input", { id, type: type === "number" ? "number" : "text", step: type === "number" ? "any" : null,
    placeholder: "the server's default" });
  input.value = value === undefined || value === null ? "" : String(value);
  return input;
}

function valueOf(element, control) {
  const type = element.type || "text";
  if (type === "checkbox") return control.checked;
  if (type === "number") return control.value === "" ? undefined : Number(control.value);
  if (type === "json") return control.value.trim() === "" ? undefined : JSON.parse(control.value);
  return control.value;
}

function renderSettings() {
  const form = $("settings");
  const focused = document.activeElement && form.contains(document.activeElement) ? document.activeElement.id : null;
  form.replaceChildren();
  const settable = state.ui.filter((e) => e.ui_type === "config" && e.key && e.client_settable);
  if (!settable.length) {
    form.append(el("p", { className: "hint", text: "This server lets a client set none of its plugins' settings." }));
    return;
  }
  for (const element of settable) {
    const id = settingId(element.key);
    const value = Object.prototype.hasOwnProperty.call(state.settings, element.key)
      ? state.settings[element.key] : (element.value !== undefined ? element.value : element.default);
    const control = controlFor(element, id, value);
    const error = el("p", { className: "error", id: `${id}-error`, role: "alert" });
    const hint = element.description ? el("p", { className: "hint", id: `${id}-hint`, text: element.description }) : null;
    control.setAttribute("aria-describedby", [hint ? `${id}-hint` : "", `${id}-error`].join(" ").trim());
    control.addEventListener("change", () => changeSetting(element, control, error));
    const label = el("label", { for: id, text: element.label || element.key });
    const row = el("div", { className: `setting ${element.type || "text"}` }, label, control, hint, error);
    form.append(row);
  }
  if (focused && $(focused)) $(focused).focus();
}

async function changeSetting(element, control, error) {
  let value;
  try {
    value = valueOf(element, control);
  } catch (failure) {
    control.setAttribute("aria-invalid", "true");
    error.textContent = `Not JSON: ${failure.message}`;
    return;
  }
  control.removeAttribute("aria-invalid");
  error.textContent = "";
  if (value === undefined) delete state.settings[element.key];
  else state.settings[element.key] = value;
  saveSettings();
  await refreshPlugins();
  notice(`${element.label || element.key} set for this session's turns.`);
}

function renderPlugins(plugins) {
  const list = $("plugins");
  list.replaceChildren();
  for (const plugin of plugins.data) {
    list.append(el("li", { className: plugin.enabled ? "plugin on" : "plugin off" },
      el("span", { className: "name", text: plugin.name }),
      el("span", { className: "kind", text: plugin.kind }),
      el("span", { className: "state", text: plugin.enabled ? "on" : "off" }),
      el("span", { className: "reason", text: plugin.reason || "" })));
  }
  for (const warning of plugins.warnings || []) list.append(el("li", { className: "warning", text: String(warning) }));
}

function renderActions(actions) {
  const box = $("session-actions");
  box.replaceChildren();
  const manual = actions.filter((a) => !a.trigger || a.trigger === "manual");
  for (const element of elementsOf("session_action")) {
    const id = element.action || element.id;
    if (id && !manual.some((a) => a.id === id)) manual.push({ id, label: element.label, plugin: element.action_owner });
  }
  for (const action of manual) {
    const qualified = action.plugin ? `${action.plugin}:${action.id}` : String(action.id);
    box.append(el("button", { type: "button", text: action.label || action.id, title: action.description || null,
      disabled: !state.session, onclick: () => runAction(qualified, action.label || action.id) }));
  }
}

async function runAction(id, label) {
  if (!state.session) return;
  try {
    await apiJson("POST", `${sessionPath(state.session.id)}/actions/${encodeURIComponent(id)}`,
      { config: state.settings });
    state.session = await apiJson("GET", sessionPath(state.session.id));
    renderTranscript();
    renderStatus();
    notice(`${label}: done.`);
  } catch (error) {
    problem(`${label}: ${error.message}`);
  }
}

// -- completions in the input -----------------------------------------------------------------

let completionTimer = null;

function closeCompletions() {
  state.completions = [];
  state.active = -1;
  $("completions").hidden = true;
  $("completions").replaceChildren();
  $("message").setAttribute("aria-expanded", "false");
  $("message").removeAttribute("aria-activedescendant");
}

function showCompletions(found) {
  closeCompletions();
  if (!found.length) return;
  state.completions = found;
  found.forEach((c, i) => {
    $("completions").append(el("li", { id: `completion-${i}`, role: "option", "aria-selected": "false",
      text: String(c.label || c.display || c.text || c.replacement || ""), onmousedown: (e) => {
        e.preventDefault();
        acceptCompletion(i);
      } }));
  });
  $("completions").hidden = false;
  $("message").setAttribute("aria-expanded", "true");
}

function highlight(index) {
  const items = $("completions").querySelectorAll("li");
  state.active = (index + items.length) % items.length;
  items.forEach((item, i) => item.setAttribute("aria-selected", i === state.active ? "true" : "false"));
  $("message").setAttribute("aria-activedescendant", `completion-${state.active}`);
}

async function askCompletions() {
  const text = $("message").value;
  if (!text.trim()) {
    closeCompletions();
    return;
  }
  try {
    const found = await apiJson("POST", "/v1/input/completions", { text, config: state.settings });
    if ($("message").value === text) showCompletions(found.data);
  } catch {
    closeCompletions();
  }
}

async function acceptCompletion(index) {
  const chosen = state.completions[index];
  const text = $("message").value;
  closeCompletions();
  if (!chosen) return;
  let next = "";
  try {
    next = (await apiJson("POST", "/v1/input/completions/apply", { text, completion: chosen,
      config: state.settings })).text;
  } catch { next = ""; }
  if (!next) {
    const insert = String(chosen.text || chosen.replacement || "");
    if (typeof chosen.replace === "string" && text.endsWith(chosen.replace)) {
      next = text.slice(0, text.length - chosen.replace.length) + insert;
    } else if (Number.isInteger(chosen.start) && chosen.start >= 0 && chosen.start <= text.length) {
      next = text.slice(0, chosen.start) + insert;
    } else {
      next = text + insert;
    }
  }
  $("message").value = next;
  $("message").focus();
}

function onMessageKey(event) {
  const open = !$("completions").hidden;
  if (open && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
    event.preventDefault();
    highlight(state.active + (event.key === "ArrowDown" ? 1 : -1));
  } else if (open && state.active >= 0 && (event.key === "Enter" || event.key === "Tab")) {
    event.preventDefault();
    acceptCompletion(state.active);
  } else if (open && event.key === "Escape") {
    event.preventDefault();
    closeCompletions();
  } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
}

// -- start ---------------------------------------------------------------------------------

async function start() {
  try {
    await listSessions();
  } catch (error) {
    if (error.status !== 401) askForToken(`The server did not answer: ${error.message}`);
    return;
  }
  $("auth").hidden = true;
  $("app").hidden = false;
  await refreshPlugins();
}

function wire() {
  $("auth-form").addEventListener("submit", connect);
  $("new-session").addEventListener("click", () => createSession().catch((e) => problem(`Error: ${e.message}`)));
  $("more-sessions").addEventListener("click", () => listSessions(true));
  $("delete-session").addEventListener("click", deleteSession);
  $("export-session").addEventListener("click", exportSession);
  $("cancel").addEventListener("click", cancelTurn);
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("message").value;
    if (!text.trim() || state.running) return;
    $("message").value = "";
    closeCompletions();
    sendTurn(text);
  });
  $("message").addEventListener("keydown", onMessageKey);
  $("message").addEventListener("input", () => {
    clearTimeout(completionTimer);
    completionTimer = setTimeout(askCompletions, 150);
  });
  $("message").addEventListener("blur", () => setTimeout(closeCompletions, 100));
  start();
}

document.addEventListener("DOMContentLoaded", wire);
