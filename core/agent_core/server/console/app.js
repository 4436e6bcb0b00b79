// The agent-core web console: plain JavaScript over the server's public HTTP API.
//
// Everything shown here comes from the server or a model, so it is untrusted: it is put
// on the page with textContent and DOM calls only (a model's Markdown through markdown.js,
// which builds nodes too), never parsed as HTML. The token, when the server wants one,
// travels in the Authorization header of each fetch (never in a URL or a cookie, so the
// server's cross-site protections hold) and is kept in this tab's sessionStorage, which no
// other tab or site can read and which is gone with the tab.
//
// Nothing a person typed is lost: a turn that fails stays on the page, marked, with a Retry,
// and its text goes back into an empty composer; a cancelled reply stays, marked stopped
// (the server keeps it too). No promise is left to reject unseen: every handler goes
// through guarded(), so a failure is said on the page, never thrown at the browser console.
// The settings, plugins, actions, models and completions live in panels.js.
"use strict";

const TOKEN_KEY = "agent-core-console-token";
const SETTINGS_KEY = "agent-core-console-settings";
const PAGE = 40;            // sessions shown at first, and added by "More sessions"
const TITLE_FETCHES = 4;    // session titles asked for at once

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  session: null,        // the open session as GET /v1/sessions/{id} returned it (null: a new one, not made yet)
  ui: [],               // /v1/ui-schema elements for the current settings
  settings: {},         // per session: the config keys this client chose (the model among them)
  running: null,        // {rid, view} while a turn streams
  heads: [],            // every session's head, most recently updated first
  shown: PAGE,
  titles: new Map(),    // session id -> {revision, title}
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
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), guarded(value));
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

// Every event handler runs through this: what goes wrong is said on the page, not thrown.
function guarded(fn) {
  return (...args) => {
    try {
      const result = fn(...args);
      if (result && typeof result.catch === "function") result.catch(report);
    } catch (error) {
      report(error);
    }
  };
}

function report(error) {
  if (error && error.status === 401) return;  // the token form already says so
  if (error && error.status === 0) return;    // the offline banner already says so
  problem(`Error: ${error && error.message ? error.message : error}`);
}

// -- the HTTP API -------------------------------------------------------------------------

class ApiFailure extends Error {
  constructor(status, body, message) {
    const said = body && body.error && body.error.message ? body.error.message : `HTTP ${status}`;
    super(message || said);
    this.status = status;
  }
}

const DOWN = "The server did not answer: it may be stopped or restarting, or the network is down.";

function offline(down) {
  $("offline").hidden = !down;
  if (down) $("offline-text").textContent = `${DOWN} What you wrote is kept on this page.`;
}

async function api(method, path, body, headers) {
  const sent = Object.assign({}, headers || {});
  if (state.token) sent.authorization = `Bearer ${state.token}`;
  if (body !== undefined) sent["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch {
    offline(true);
    throw new ApiFailure(0, null, DOWN);
  }
  offline(false);
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

// -- the conversation pane: follows the newest text while the reader is at the end --------

const pane = () => $("transcript");

function atEnd() {
  const p = pane();
  return p.scrollHeight - p.scrollTop - p.clientHeight < 48;
}

function toEnd() {
  const p = pane();
  p.scrollTop = p.scrollHeight;
}

function growing(change) {  // run change(); keep the newest text in view if the reader was watching it
  const follow = atEnd();
  change();
  if (follow) toEnd();
}

// -- the transcript ------------------------------------------------------------------------

const ROLE_NAMES = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };

function messageItem(role, meta) {
  const who = el("p", { className: "who", text: ROLE_NAMES[role] || role });
  if (meta && typeof meta.model === "string" && meta.model) {
    who.append(el("span", { className: "model-name", text: meta.model }));
  }
  if (meta && meta.stopped) who.append(el("span", { className: "state", text: "Stopped" }));
  const body = el("div", { className: "content" });
  const item = el("li", { className: `msg ${role}` }, who, body);
  return { item, body, who };
}

function textNode(role, text) {
  if (role === "assistant") {
    const box = el("div", { className: "text md" });
    box.append(Markdown.render(text));
    return box;
  }
  return el("p", { className: "text", text });
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
  for (const node of pane().querySelectorAll(".tool-call")) {
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
  pane().append(item);
}

function showMessage(message) {
  if (message.role === "tool") {
    showToolResult(message);
    return null;
  }
  const meta = message.metadata || {};
  const { item, body } = messageItem(message.role, meta);
  if (typeof meta.reasoning === "string" && meta.reasoning) body.append(reasoningBlock(meta.reasoning).node);
  const text = typeof message.content === "string" ? message.content : pretty(message.content);
  if (text) body.append(textNode(message.role, text));
  for (const call of Array.isArray(meta.tool_calls) ? meta.tool_calls : []) body.append(toolCallBlock(call).node);
  const footer = footerOf(message);
  if (footer) item.append(footer);
  pane().append(item);
  return item;
}

function renderTranscript() {
  growing(() => {
    pane().replaceChildren();
    for (const message of (state.session && state.session.messages) || []) showMessage(message);
  });
}

// -- a streamed turn -------------------------------------------------------------------------

class TurnView {
  constructor(question) {
    this.question = question;
    this.live = new Map();  // iteration -> {item, text, raw, reasoning}
    this.asked = showMessage({ role: "user", content: question });
    this.cancelled = false;
    this.saved = false;
    this.failure = null;    // what an error frame said
  }

  bubble(iteration) {
    if (!this.live.has(iteration)) {
      const { item, body, who } = messageItem("assistant");
      item.classList.add("streaming");
      const text = el("div", { className: "text md" });
      body.append(text);
      growing(() => pane().append(item));
      this.live.set(iteration, { item, body, who, text, raw: "", reasoning: null, timer: null });
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
    if (typeof message.content === "string") {
      bubble.raw += message.content;
      if (bubble.timer === null) bubble.timer = setTimeout(() => this.paint(bubble), 40);
    }
  }

  paint(bubble) {  // the Markdown of the text so far, at most every 40 ms however fast it comes
    bubble.timer = null;
    growing(() => bubble.text.replaceChildren(Markdown.render(bubble.raw)));
  }

  final(event) {
    const old = this.live.get(event.iteration);
    if (old && old.timer !== null) clearTimeout(old.timer);
    let item = null;
    growing(() => {
      item = showMessage(event.message || {});
      if (old) {
        if (item) old.item.replaceWith(item);
        else old.item.remove();
      }
    });
    this.live.delete(event.iteration);
  }

  stopped() {  // a cancel: what was streamed stays, marked
    this.cancelled = true;
    for (const bubble of this.live.values()) {
      if (bubble.timer !== null) clearTimeout(bubble.timer);
      this.paint(bubble);
      bubble.item.classList.remove("streaming");
      bubble.who.append(el("span", { className: "state", text: "Stopped" }));
    }
  }

  dropAll() {  // back to the session as it was, with the question asked again
    this.live.clear();
    renderTranscript();
    this.asked = showMessage({ role: "user", content: this.question });
  }

  retract(event) {
    const old = this.live.get(event.iteration);
    if (old) old.item.remove();
    this.live.delete(event.iteration);
  }

  failed(message) {  // the turn is not saved: its question stays, marked, with a way to ask again
    for (const bubble of this.live.values()) bubble.item.remove();
    this.live.clear();
    const retry = el("button", { type: "button", className: "retry", text: "Retry", onclick: () => {
      if ($("message").value === this.question) $("message").value = "";
      this.asked.remove();
      return sendTurn(this.question);
    } });
    this.asked.classList.add("failed");
    this.asked.append(el("p", { className: "turn-error", role: "alert" },
      el("span", { text: `Not sent: ${message}` }), retry));
    if (!$("message").value.trim()) {
      $("message").value = this.question;
      sizeComposer();
    }
    growing(() => {});
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
  growing(() => {
    if (target) target.replaceChildren(box);
    else pane().append(el("li", { className: "msg tool" }, box));
  });
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
      view.failure = (frame.error || {}).message || frame.type; break;
    case "done":
      if (frame.outcome && frame.outcome.reason === "cancelled") {
        view.stopped();
        notice("The turn was cancelled; what was written so far is kept.");
      } else if (frame.session && !view.failure) {
        state.session = Object.assign({}, state.session, { messages: frame.session.messages,
          metadata: frame.session.metadata });
        renderTranscript();
        renderStatus();
      }
      break;
    case "saved":
      view.saved = true;
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
    let got;
    try {
      got = await reader.read();
    } catch {
      throw new ApiFailure(0, null, "the connection to the server broke off before the reply ended");
    }
    if (got.done) break;
    buffer += decoder.decode(got.value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data) {
        let frame;
        try { frame = JSON.parse(data); } catch (error) { problem(`Unreadable event: ${error.message}`); continue; }
        onData(frame);
      }
    }
  }
}

async function sendTurn(text) {
  const rid = newId();
  notice("");
  const view = new TurnView(text);
  state.running = { rid, view };
  setRunning(true);
  toEnd();
  try {
    if (!state.session) await createSession(text);
    const response = await api("POST", `${sessionPath(state.session.id)}/turns?approvals=ask`,
      { message: text, config: state.settings }, { "x-request-id": rid });
    if (!response.ok) throw new ApiFailure(response.status, await response.json().catch(() => null));
    await readFrames(response, (frame) => onFrame(view, frame));
    if (view.failure) throw new Error(view.failure);
  } catch (error) {
    view.failed(error.status === 401 ? "the server wants a token" : error.message);
  } finally {
    state.running = null;
    setRunning(false);
  }
  if (view.cancelled && view.saved) await reopen();  // the page shows what the store kept
  await listSessions().catch(report);
}

async function reopen() {
  try {
    state.session = await apiJson("GET", sessionPath(state.session.id));
    renderTranscript();
    renderStatus();
  } catch (error) {
    report(error);
  }
}

function setRunning(on) {
  $("send").disabled = on;
  $("cancel").disabled = !on;
  pane().setAttribute("aria-busy", on ? "true" : "false");
}

async function cancelTurn() {
  if (!state.running) return;
  try {
    await apiJson("DELETE", `/v1/requests/${encodeURIComponent(state.running.rid)}`);
  } catch (error) {
    if (error.status !== 404) problem(`Could not cancel: ${error.message}`);
  }
}

// -- sessions: most recent first, one URL each ------------------------------------------------

function ago(iso) {
  const then = Date.parse(iso);
  if (!Number.isFinite(then)) return "";
  const s = Math.max(0, (Date.now() - then) / 1000);
  if (s < 45) return "just now";
  if (s < 90) return "a minute ago";
  if (s < 3600) return `${Math.round(s / 60)} minutes ago`;
  if (s < 5400) return "an hour ago";
  if (s < 86400) return `${Math.round(s / 3600)} hours ago`;
  if (s < 2 * 86400) return "yesterday";
  if (s < 7 * 86400) return `${Math.floor(s / 86400)} days ago`;
  return new Date(then).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

function titleOf(session) {
  const meta = session.metadata || {};
  if (typeof meta.title === "string" && meta.title.trim()) return meta.title.trim();
  const first = (session.messages || []).find((m) => m.role === "user" && typeof m.content === "string");
  const line = first ? first.content.trim().split("\n")[0] : "";
  if (!line) return "Empty session";
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

async function listSessions() {
  const heads = [];
  let after = "";
  for (let page = 0; page < 5; page++) {  // up to 5000 sessions, then sorted here by when each last changed
    const got = await apiJson("GET", `/v1/sessions?limit=1000${after}`);
    heads.push(...got.data);
    if (got.data.length < 1000) break;
    after = `&after=${encodeURIComponent(got.data[got.data.length - 1].id)}`;
  }
  heads.sort((a, b) => (Date.parse(b.updated_at) || 0) - (Date.parse(a.updated_at) || 0));
  state.heads = heads;
  renderSessionList();
}

function renderSessionList() {
  const list = $("session-list");
  list.replaceChildren();
  const open = state.session ? state.session.id : null;
  const shown = state.heads.slice(0, state.shown);
  for (const head of shown) {
    const known = state.titles.get(head.id);
    const button = el("button", { type: "button", className: "open", "data-id": head.id,
      "aria-current": head.id === open ? "page" : null, title: `${head.id}, updated ${head.updated_at}`,
      onclick: () => openSession(head.id) },
    el("span", { className: "title", text: known ? known.title : "…" }),
    el("span", { className: "meta", text: `${ago(head.updated_at)} · ${head.message_count} messages` }));
    list.append(el("li", {}, button));
  }
  $("more-sessions").hidden = state.heads.length <= state.shown;
  fillTitles(shown.filter((h) => !state.titles.has(h.id) || state.titles.get(h.id).revision !== h.revision));
}

async function fillTitles(heads) {
  const queue = heads.slice();
  const worker = async () => {
    while (queue.length) {
      const head = queue.shift();
      let title;
      try {
        title = titleOf(await apiJson("GET", sessionPath(head.id)));
      } catch {
        continue;  // gone meanwhile, or the server is away: the row keeps its placeholder
      }
      state.titles.set(head.id, { revision: head.revision, title });
      for (const row of $("session-list").querySelectorAll("button.open")) {
        if (row.getAttribute("data-id") === head.id) row.querySelector(".title").textContent = title;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(TITLE_FETCHES, queue.length) }, worker));
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

function urlOf(id) {
  return id ? `/?session=${encodeURIComponent(id)}` : "/";
}

function remember(id, replace) {  // the address bar names the open session, so reload and back find it
  if (location.pathname + location.search === urlOf(id)) return;
  if (replace) history.replaceState({ session: id }, "", urlOf(id));
  else history.pushState({ session: id }, "", urlOf(id));
}

function showHeader() {
  const open = Boolean(state.session);
  $("chat-title").textContent = open ? titleOf(state.session) : "New session";
  document.title = open ? `${titleOf(state.session)} · agent-core console` : "agent-core console";
  $("export-session").disabled = !open;
  $("delete-session").disabled = !open;
}

async function openSession(id, how) {
  const { replace = false } = how || {};
  let got;
  try {
    got = await apiJson("GET", sessionPath(id));
  } catch (error) {
    if (error.status === 404) {
      await newChat({ replace: true });
      problem(`There is no session ${id} on this server (deleted, or another server's).`);
    } else {
      report(error);
    }
    return;
  }
  state.session = got;
  state.settings = loadSettings(id);
  remember(id, replace);
  showHeader();
  notice("");
  closeSidebar();
  renderTranscript();
  toEnd();
  chooseModel();
  renderSessionList();
  await refreshPlugins();
  $("message").focus();
}

async function newChat(how) {
  const { replace = false } = how || {};
  const model = state.settings.model;  // the model chosen goes on to the next session
  state.session = null;
  state.settings = model ? { model } : {};
  remember(null, replace);
  showHeader();
  notice("");
  closeSidebar();
  pane().replaceChildren();
  $("session-actions").replaceChildren();
  chooseModel();
  renderStatus();
  renderSessionList();
  await refreshPlugins();
  $("message").focus();
}

async function createSession(question) {
  const made = await apiJson("POST", "/v1/sessions", {});
  state.session = { id: made.id, revision: made.revision, messages: [{ role: "user", content: question }],
    metadata: {} };
  saveSettings();  // the settings chosen before the session existed are its own
  remember(made.id, false);
  showHeader();
  listSessions().catch(() => {});  // the new session joins the list while its first turn runs
  await refreshPlugins();
}

async function deleteSession() {
  $("session-menu").open = false;
  if (!state.session || !window.confirm(`Delete "${titleOf(state.session)}"? This cannot be undone.`)) return;
  const gone = state.session;
  try {
    await apiJson("DELETE", sessionPath(gone.id));
  } catch (error) {
    problem(`Could not delete: ${error.message}`);
    return;
  }
  await newChat();
  notice(`Deleted "${titleOf(gone)}".`);
  await listSessions();
  $("new-session").focus();
}

async function exportSession() {
  $("session-menu").open = false;
  if (!state.session) return;
  const data = await apiJson("GET", sessionPath(state.session.id));
  const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
  const link = el("a", { href: url, download: `session-${state.session.id}.json`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// -- the phone's drawer ------------------------------------------------------------------------

function openSidebar() {
  $("sidebar").classList.add("open");
  $("scrim").hidden = false;
  $("open-sidebar").setAttribute("aria-expanded", "true");
  $("new-session").focus();
}

function closeSidebar() {
  $("sidebar").classList.remove("open");
  $("scrim").hidden = true;
  $("open-sidebar").setAttribute("aria-expanded", "false");
}

// -- start ---------------------------------------------------------------------------------

async function start() {
  try {
    await listSessions();
  } catch (error) {
    if (error.status === 0) {
      $("auth").hidden = true;
      $("app").hidden = false;
    } else if (error.status !== 401) {
      askForToken(`The server did not answer as expected: ${error.message}`);
    }
    return;
  }
  $("auth").hidden = true;
  $("app").hidden = false;
  await loadModels();
  const id = new URLSearchParams(location.search).get("session");
  if (id) await openSession(id, { replace: true });
  else await newChat({ replace: true });
}

function submit(event) {
  event.preventDefault();
  const text = $("message").value;
  if (!text.trim() || state.running) return;
  $("message").value = "";
  sizeComposer();
  closeCompletions();
  return sendTurn(text);
}

function wire() {
  $("auth-form").addEventListener("submit", guarded(connect));
  $("new-session").addEventListener("click", guarded(() => newChat()));
  $("more-sessions").addEventListener("click", guarded(() => {
    state.shown += PAGE;
    renderSessionList();
  }));
  $("delete-session").addEventListener("click", guarded(deleteSession));
  $("export-session").addEventListener("click", guarded(exportSession));
  $("cancel").addEventListener("click", guarded(cancelTurn));
  $("reconnect").addEventListener("click", guarded(start));
  $("open-sidebar").addEventListener("click", openSidebar);
  $("close-sidebar").addEventListener("click", closeSidebar);
  $("scrim").addEventListener("click", closeSidebar);
  $("composer").addEventListener("submit", guarded(submit));
  wireComposer();
  window.addEventListener("popstate", guarded(() => {
    const id = new URLSearchParams(location.search).get("session");
    return id ? openSession(id, { replace: true }) : newChat({ replace: true });
  }));
  window.addEventListener("unhandledrejection", (event) => {  // a last net: said on the page
    event.preventDefault();
    report(event.reason);
  });
  guarded(start)();
}

document.addEventListener("DOMContentLoaded", wire);
