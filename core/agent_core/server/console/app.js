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
// The conversation and turns live in transcript.js, the sessions in sessions.js, the settings,
// plugins, actions, models and completions in panels.js; this file holds what they share and
// starts the page.
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
  document.addEventListener("click", (event) => {  // a menu closes when one clicks elsewhere, as menus do
    if ($("session-menu").open && !$("session-menu").contains(event.target)) $("session-menu").open = false;
  });
  $("session-menu").addEventListener("keydown", (event) => {
    if (event.key === "Escape" && $("session-menu").open) {
      $("session-menu").open = false;
      $("session-menu").querySelector("summary").focus();
    }
  });
  $("sidebar").addEventListener("keydown", (event) => {
    if (event.key === "Escape" && $("sidebar").classList.contains("open")) {
      closeSidebar();
      $("open-sidebar").focus();
    }
  });
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
