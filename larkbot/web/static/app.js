// The larkbot web page: log in, chat over POST /chat (AG-UI events over SSE), consent cards,
// ui_card as A2UI, tool steps, the session list and the scheduled-tasks view. No build step.
import { t, applyStrings, label, toggleLanguage } from "./i18n.js";
import { setMarkdown } from "./markdown.js";
import { A2uiProcessor } from "./a2ui.js";
import { $, api, node, showLogin } from "./dom.js";
import { loadSchedules } from "./schedules.js";
import { loadAccounts } from "./accounts.js";
import { hideExamples, showExamples } from "./examples.js";
import { consentCard, resolveConsent } from "./consent_card.js";
import { checkSetup, redrawSetup } from "./setup.js";
import { showMemory, hideMemory, loadMemory } from "./memory.js";

const state = { session: null, run: null, lastEventId: null, busy: false };
const a2ui = new A2uiProcessor();

// -- login ------------------------------------------------------------------------------------
async function login(event) {
  event.preventDefault();
  const resp = await fetch("/api/login", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: $("token").value }), credentials: "same-origin",
  });
  if (resp.ok) {
    $("login").hidden = true;
    $("token").value = "";
    $("login-error").textContent = "";
    delete $("login-error").dataset.i18n;
    checkSetup().catch(() => {});
    await loadSessions();
    if (!state.session) showExamples(sendExample);
  } else {
    $("login-error").dataset.i18n = resp.status === 429 ? "tooMany" : "wrongToken";
    $("login-error").textContent = t($("login-error").dataset.i18n);
  }
}

// -- messages ---------------------------------------------------------------------------------
function scrollDown() { const m = $("messages"); m.scrollTop = m.scrollHeight; }

function addMessage(role, text) {
  hideExamples();
  const box = node("article", `msg ${role}`);
  box.append(label("div", "who", role === "user" ? "you" : "bot"));
  const body = node("div", "body");
  if (role === "user") body.textContent = text; else setMarkdown(body, text);
  box.append(body);
  $("messages").append(box);
  scrollDown();
  return body;
}

// A line of the page's own (an error, "Stopped."): its words follow the 中/EN switch.
function addNotice(key, detail) {
  const body = addMessage("error", "");
  body.replaceChildren(label("span", null, key));
  if (detail) body.append(document.createTextNode(`: ${detail}`));
}

function toolStep(id, name) {
  const step = node("details", "tool-step running");
  step.dataset.callId = id;
  const summary = node("summary");
  summary.append(node("span", "tool-mark", "⚙"), node("code", null, name), label("span", "tool-state", "running"));
  step.append(summary, node("pre", "tool-args"), node("pre", "tool-result"));
  $("messages").append(step);
  scrollDown();
  return step;
}

function showA2ui(messages) {
  const { created, error } = a2ui.process(messages);
  for (const root of created) {
    const wrap = node("div", "card-wrap");
    wrap.append(root);
    $("messages").append(wrap);
  }
  if (error) {
    const box = node("div", "a2ui-error");
    box.append(label("span", null, "cardError"), `: ${error.message}`);
    $("messages").append(box);
  }
  scrollDown();
}

function showAttachment(value) {
  hideExamples();
  const box = node("article", "msg assistant attachment");
  box.append(label("div", "who", "bot"));
  const body = node("div", "body");
  if (value.kind === "image" && value.url) {
    const img = node("img", "attachment-image");
    img.src = value.url;
    img.alt = value.caption || value.name;
    body.append(img);
  }
  const link = node("a", null, `📎 ${value.name}`);
  if (value.url) { link.href = value.url; link.download = value.name; }
  body.append(link);
  if (value.caption) body.append(node("div", "caption", value.caption));
  box.append(body);
  $("messages").append(box);
  scrollDown();
}

// Text of a stored message's content: a string, or OpenAI content parts (text and images).
function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((p) => p && p.type === "text").map((p) => p.text).join("\n");
  return "";
}

// -- one run's events -------------------------------------------------------------------------
function makeView() {
  return { text: null, textValue: "", thinking: null, steps: new Map(), pending: false };
}

function apply(view, ev) {
  switch (ev.type) {
    case "RUN_STARTED":
      state.run = ev.runId;
      state.session = ev.threadId;
      break;
    case "TEXT_MESSAGE_START":
      view.textValue = "";
      view.text = addMessage("assistant", "");
      break;
    case "TEXT_MESSAGE_CONTENT":
      view.textValue += ev.delta;
      if (!view.pending) {
        view.pending = true;
        requestAnimationFrame(() => { view.pending = false; if (view.text) { setMarkdown(view.text, view.textValue); scrollDown(); } });
      }
      break;
    case "TEXT_MESSAGE_END":
      if (view.text) setMarkdown(view.text, view.textValue);
      view.text = null;
      break;
    case "REASONING_MESSAGE_START": {
      // the model's chain of thought: a collapsed panel, never part of the answer
      const panel = node("details", "thinking");
      const summary = node("summary", null, "💭 ");
      summary.append(label("span", null, "thinking"));
      panel.append(summary, node("pre"));
      $("messages").append(panel);
      view.thinking = panel.querySelector("pre");
      break;
    }
    case "REASONING_MESSAGE_CONTENT":
      if (view.thinking) view.thinking.textContent += ev.delta;
      break;
    case "REASONING_MESSAGE_END":
      view.thinking = null;
      break;
    case "TOOL_CALL_START":
      view.steps.set(ev.toolCallId, toolStep(ev.toolCallId, ev.toolCallName));
      break;
    case "TOOL_CALL_ARGS": {
      const step = view.steps.get(ev.toolCallId);
      if (step) step.querySelector(".tool-args").textContent += ev.delta;
      break;
    }
    case "TOOL_CALL_RESULT": {
      const step = view.steps.get(ev.toolCallId);
      if (!step) break;
      const failed = ev.metadata && ev.metadata.isError;
      step.classList.remove("running");
      step.classList.add(failed ? "failed" : "ok");
      step.querySelector(".tool-mark").textContent = failed ? "✗" : "✓";
      const stateLabel = step.querySelector(".tool-state");
      stateLabel.dataset.i18n = failed ? "failed" : "done";
      stateLabel.textContent = t(stateLabel.dataset.i18n);
      step.querySelector(".tool-result").textContent = typeof ev.content === "string" ? ev.content : JSON.stringify(ev.content);
      break;
    }
    case "CUSTOM":
      if (ev.name === "consent_request") consentCard(ev.value);
      else if (ev.name === "consent_resolved") resolveConsent(ev.value);
      else if (ev.name === "a2ui") showA2ui(ev.value.messages);
      else if (ev.name === "attachment") showAttachment(ev.value);
      break;
    case "RUN_FINISHED":  // a stopped turn ends with the cancelled outcome, not as a failure
      if (ev.outcome && ev.outcome.type === "cancelled") addNotice("stopped");
      break;
    case "RUN_ERROR":
      addNotice("error", ev.message);
      break;
  }
}

// Reads `data:` events from an SSE response body; returns true when the run ended.
async function readStream(resp, view) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) state.lastEventId = line.slice(3).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (!data) continue;
      const ev = JSON.parse(data);
      apply(view, ev);
      if (ev.type === "RUN_FINISHED" || ev.type === "RUN_ERROR") ended = true;
    }
  }
  return ended;
}

function setBusy(busy) {
  state.busy = busy;
  $("send").hidden = busy;
  $("stop").hidden = !busy;
}

// Reads a run's stream to its end, resuming with Last-Event-ID when the connection breaks.
async function follow(resp, view) {
  for (let attempt = 0; attempt < 5; attempt++) {
    let ended = false;
    try { ended = await readStream(resp, view); } catch { ended = false; }
    if (ended || !state.lastEventId) return;
    addNotice("reconnecting");
    resp = await resume(state.lastEventId);
    if (!resp.ok) return;
  }
}

function resume(lastEventId) {
  return fetch("/chat", {
    method: "POST", credentials: "same-origin", body: "{}",
    headers: { "Last-Event-ID": lastEventId, "Content-Type": "application/json" },
  });
}

// A turn still running in an opened session (e.g. after a reload): replay and follow it.
async function rejoin(runId) {
  setBusy(true);
  try {
    const resp = await resume(`${runId}:0`);
    if (resp.ok) await follow(resp, makeView());
  } finally {
    setBusy(false);
    state.run = null;
    state.lastEventId = null;
  }
}

async function send(event) {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text || state.busy) return;
  $("input").value = "";
  addMessage("user", text);
  setBusy(true);
  const view = makeView();
  try {
    const body = { message: text };
    if (state.session) body.session_id = state.session;
    const resp = await api("POST", "/chat", body);
    if (!resp.ok) { addNotice("error", (await resp.json()).msg); return; }
    await follow(resp, view);
  } finally {
    setBusy(false);
    state.run = null;
    state.lastEventId = null;
    loadSessions();
  }
}

async function stop() {
  if (state.run) await api("POST", `/api/runs/${encodeURIComponent(state.run)}/stop`);
}

// -- sessions ---------------------------------------------------------------------------------
async function loadSessions() {
  const resp = await api("GET", "/api/sessions");
  const { sessions } = await resp.json();
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const li = node("li", s.id === state.session ? "active" : "");
    const open = s.title ? node("button", "session-open", s.title) : label("button", "session-open", "untitled");
    open.addEventListener("click", () => openSession(s.id));
    const del = node("button", "session-delete icon", "×");
    del.dataset.i18nTitle = "deleteChat";
    del.title = t("deleteChat");
    del.addEventListener("click", async () => {
      await api("DELETE", `/api/sessions/${encodeURIComponent(s.id)}`);
      if (state.session === s.id) newChat();
      loadSessions();
    });
    li.append(open, del);
    list.append(li);
  }
}

function newChat() {
  state.session = null;
  $("messages").replaceChildren();
  showExamples(sendExample);
  showChat();
}

// An example prompt clicked on the empty page: sent as if typed.
function sendExample(text) {
  $("input").value = text;
  $("composer").requestSubmit();
}

async function openSession(id) {
  const resp = await api("GET", `/api/sessions/${encodeURIComponent(id)}`);
  if (!resp.ok) return;
  const { messages, running, feedback } = await resp.json();
  state.session = id;
  $("messages").replaceChildren();
  if (feedback && (feedback.up || feedback.down)) {  // 👍/👎 people gave the answers in Lark
    const badge = document.createElement("div");
    badge.className = "feedback-badge";
    badge.textContent = `👍 ${feedback.up} · 👎 ${feedback.down}`;
    $("messages").append(badge);
  }
  for (const m of messages) {
    if (m.role === "user") addMessage("user", textOf(m.content));
    else if (m.role === "assistant") {
      if (m.content) addMessage("assistant", textOf(m.content));
      for (const call of m.tool_calls || []) {
        const step = toolStep(call.id, call.function.name);
        step.classList.remove("running");
        const stateLabel = step.querySelector(".tool-state");
        delete stateLabel.dataset.i18n;  // a stored call: no state to show
        stateLabel.textContent = "";
        step.querySelector(".tool-args").textContent = call.function.arguments;
      }
    } else if (m.role === "tool") {
      const step = document.querySelector(`.tool-step[data-call-id="${CSS.escape(m.tool_call_id)}"]`);
      if (step) step.querySelector(".tool-result").textContent = m.content;
    }
  }
  showChat();
  loadSessions();
  if (running && !state.busy) rejoin(running);
}

function showChat() {
  $("chat-view").hidden = false; $("schedules-view").hidden = true;
  $("nav-chat").classList.add("active"); $("nav-schedules").classList.remove("active");
  hideMemory();
  document.body.classList.remove("menu-open");
}

function showSchedules() {
  $("chat-view").hidden = true; $("schedules-view").hidden = false;
  $("nav-chat").classList.remove("active"); $("nav-schedules").classList.add("active");
  hideMemory();
  document.body.classList.remove("menu-open");
  loadSchedules();
  loadAccounts();
}

// -- start ------------------------------------------------------------------------------------
applyStrings();
$("login-form").addEventListener("submit", login);
$("composer").addEventListener("submit", send);
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
});
$("stop").addEventListener("click", stop);
$("new-chat").addEventListener("click", newChat);
$("nav-chat").addEventListener("click", showChat);
$("nav-schedules").addEventListener("click", showSchedules);
$("nav-memory").addEventListener("click", showMemory);
$("lang").addEventListener("click", () => {
  toggleLanguage();
  redrawSetup();  // the server's words, or their translation
  if (!$("schedules-view").hidden) { loadSchedules(); loadAccounts(); }  // built with t()
  if (!$("memory-view").hidden) loadMemory();  // likewise
});
$("menu").addEventListener("click", () => document.body.classList.toggle("menu-open"));
$("logout").addEventListener("click", async () => { await api("POST", "/api/logout"); showLogin(); });
loadSessions().then(() => { if (!state.session) showExamples(sendExample); }).catch(() => {});
checkSetup().catch(() => {});
