// What the server and its plugins contribute around the conversation: the model picker (only the
// models GET /v1/models offers, which the operator bounds with --models), the settings panel built
// from the UI schema, the "about this server" panel of plugins and why each is on, session
// actions, the status bar and footers, and the composer's completions. Loaded after app.js,
// whose helpers (el, $, apiJson, state...) it uses; everything it shows is put in as text.
"use strict";

// -- paths and templates (a dotted `data` path and a `{{data}}` template) ---------------------

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
  if (state.session) showHeader();  // a title plugin may have named the session meanwhile
}

function footerOf(message) {
  const parts = elementsOf("message_footer").map((e) => filled(e, message)).filter((t) => t);
  return parts.length ? el("p", { className: "footer", text: parts.join(" · ") }) : null;
}

// -- the model picker ------------------------------------------------------------------------------

async function loadModels() {
  const select = $("model");
  let listed = [];
  let fallback = null;  // what a turn naming no model runs on, when this client may use it
  try {
    const got = await apiJson("GET", "/v1/models");
    listed = got.data.map((m) => String(m.id));
    fallback = typeof got.default === "string" ? got.default : null;
  } catch (error) {
    if (error.status !== 0 && error.status !== 401) problem(`Models: ${error.message}`);
  }
  const options = listed.map((id) => el("option", { value: id, text: id }));
  if (fallback !== null || !listed.length) {
    options.unshift(el("option", { value: "", text: fallback ? `Default (${fallback})` : "The server's default" }));
  }
  select.replaceChildren(...options);
  select.disabled = options.length < 2;
  chooseModel();
}

function chooseModel() {  // the picker shows this session's model; one no longer offered is forgotten
  const select = $("model");
  const values = [...select.options].map((o) => o.value);
  const wanted = typeof state.settings.model === "string" ? state.settings.model : "";
  if (!values.includes(wanted)) {
    // no default for this client (the operator's --models leaves it out): the first model offered
    if (values[0]) state.settings.model = values[0];
    else delete state.settings.model;
    saveSettings();
  }
  select.value = state.settings.model || "";
}

async function changeModel() {
  const value = $("model").value;
  if (value) state.settings.model = value;
  else delete state.settings.model;
  saveSettings();
  await refreshPlugins();
  notice(value ? `${value} answers the next turns of this session.` : "The server's default model answers.");
}

// -- what plugins contribute: settings, actions, plugins --------------------------------------

function configQuery() {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(state.settings)) query.set(key, JSON.stringify(value));
  const text = query.toString();
  return text ? `?${text}` : "";
}

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
    if (error.status !== 401 && error.status !== 0) problem(`Settings: ${error.message}`);
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
  const settable = state.ui.filter((e) => e.ui_type === "config" && e.key && e.client_settable && e.key !== "model");
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
    control.addEventListener("change", guarded(() => changeSetting(element, control, error)));
    const label = el("label", { for: id, text: element.label || element.key });
    form.append(el("div", { className: `setting ${element.type || "text"}` }, label, control, hint, error));
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
  if (!state.session) return;  // an action works on a session: none yet
  for (const action of manual) {
    const qualified = action.plugin ? `${action.plugin}:${action.id}` : String(action.id);
    box.append(el("button", { type: "button", text: action.label || action.id, title: action.description || null,
      onclick: () => runAction(qualified, action.label || action.id) }));
  }
}

async function runAction(id, label) {
  if (!state.session) return;
  try {
    await apiJson("POST", `${sessionPath(state.session.id)}/actions/${encodeURIComponent(id)}`,
      { config: state.settings });
    $("session-menu").open = false;
    state.session = await apiJson("GET", sessionPath(state.session.id));
    renderTranscript();
    renderStatus();
    notice(`${label}: done.`);
  } catch (error) {
    problem(`${label}: ${error.message}`);
  }
}

// -- the composer: its height, and completions -----------------------------------------------

function sizeComposer() {  // grows with its text up to the stylesheet's max-height, then scrolls
  const box = $("message");
  box.style.height = "auto";
  box.style.height = `${box.scrollHeight}px`;
}

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
        return acceptCompletion(i);
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
    return acceptCompletion(state.active);
  } else if (open && event.key === "Escape") {
    event.preventDefault();
    closeCompletions();
  } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
  return undefined;
}

function wireComposer() {
  $("model").addEventListener("change", guarded(changeModel));
  $("message").addEventListener("keydown", guarded(onMessageKey));
  $("message").addEventListener("input", () => {
    sizeComposer();
    clearTimeout(completionTimer);
    completionTimer = setTimeout(guarded(askCompletions), 150);
  });
  $("message").addEventListener("blur", () => setTimeout(closeCompletions, 100));
}
