// The conversation: the pane that follows a streaming reply, the messages as the store holds them,
// and a turn as it streams (partials re-rendered as Markdown, approvals, a cancel kept as
// stopped, a failure kept with its Retry). Loaded after app.js, whose helpers it uses.
"use strict";

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
    this.away = false;      // another session was opened while it ran
    this.failure = null;    // what an error frame said
  }

  bubble(iteration) {
    if (!this.live.has(iteration)) {
      const { item, body, who } = messageItem("assistant");
      item.classList.add("streaming");
      const text = el("div", { className: "text md" });
      body.append(text);
      growing(() => pane().append(item));
      this.live.set(iteration, { item, body, who, text, raw: "", reasoning: null, timer: null, pace: 40 });
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
      if (bubble.timer === null) bubble.timer = setTimeout(() => this.paint(bubble), bubble.pace);
    }
  }

  paint(bubble) {  // the Markdown of the text so far, every 40 ms at most, less often when it takes long
    const began = performance.now();
    bubble.timer = null;
    growing(() => bubble.text.replaceChildren(Markdown.render(bubble.raw)));
    bubble.pace = Math.min(1000, Math.max(40, 4 * (performance.now() - began)));
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
    if (this.away) {
      problem(`A turn in another session was not sent: ${message}`);
      return;
    }
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
  if (view.away) {  // another session is open now: the turn goes on and is saved, out of sight
    if (frame.type === "saved") view.saved = true;
    return;
  }
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
  let sid = null;
  try {
    if (!state.session) await createSession(text);
    sid = state.session.id;
    const response = await api("POST", `${sessionPath(sid)}/turns?approvals=ask`,
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
  // the page shows what the store kept: after a cancel, or when its session was opened again meanwhile
  const here = state.session !== null && state.session.id === sid;
  if (here && view.saved && (view.cancelled || view.away)) await reopen();
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
