// Sessions: listed most recent first by title, one address each (/?session=ID) so reload, Back
// and Forward find them; opening, starting, making, deleting and exporting one; the phone's
// drawer that holds the list. Loaded after app.js, whose helpers it uses.
"use strict";

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

function countOf(head, open) {  // the open session's turn may not be saved yet: the page knows better
  const here = head.id === open && state.session.messages ? state.session.messages.length : 0;
  return Math.max(head.message_count, here);
}

function renderSessionList() {
  const list = $("session-list");
  list.replaceChildren();
  const open = state.session ? state.session.id : null;
  const shown = state.heads.slice(0, state.shown);
  for (const head of shown) {
    const known = head.id === open ? { title: titleOf(state.session) } : state.titles.get(head.id);
    const button = el("button", { type: "button", className: "open", "data-id": head.id,
      "aria-current": head.id === open ? "page" : null, title: `${head.id}, updated ${head.updated_at}`,
      onclick: () => openSession(head.id) },
    el("span", { className: "title", text: known ? known.title : "…" }),
    el("span", { className: "meta", text: `${ago(head.updated_at)} · ${countOf(head, open)} messages` }));
    list.append(el("li", {}, button));
  }
  $("more-sessions").hidden = state.heads.length <= state.shown;
  // the open session's title is the page's own; the others' are read once per revision
  fillTitles(shown.filter((h) => h.id !== open
    && (!state.titles.has(h.id) || state.titles.get(h.id).revision !== h.revision)));
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

function focusComposer() {  // where a person types next; not while they are in the session list
  if (!$("sidebar").classList.contains("open")) $("message").focus();
}

function leaveTurn() {  // a turn still streaming stays with its own session, not the one opened now
  if (state.running) state.running.view.away = true;
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
  leaveTurn();
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
  focusComposer();
}

async function newChat(how) {
  const { replace = false } = how || {};
  const model = state.settings.model;  // the model chosen goes on to the next session
  leaveTurn();
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
  focusComposer();
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
