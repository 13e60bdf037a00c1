// The first screen while Lark is not connected: one scan with the Lark/Feishu app creates the
// bot's Lark app (POST /api/setup/start shows the QR code, GET /api/setup/status follows it).
import { problemText, t } from "./i18n.js";
import { $, api, node } from "./dom.js";

let polling = null;
let shown = null;  // the status the panel was drawn from: drawn again on the 中/EN switch
// "Later" puts the panel off in this browser until the setup state changes (a scan started
// elsewhere, an app created): a web-only larkbot is a working one, so it must not nag.
const LATER = "larkbot.setupLater";
const stateOf = (s) => `${s.configured}:${s.state}`;
// The setup status, or null when serve cannot answer it yet (503 while it starts or drains):
// the callers then keep what is drawn rather than draw an empty card from the error's body.
const status = async (method, path) => {
  const resp = await api(method, path);
  return resp.ok ? resp.json() : null;
};

function button(text, cls, onClick) {
  const b = node("button", cls, text);
  b.addEventListener("click", onClick);
  return b;
}

function list(title, items) {
  const box = node("div", "setup-list");
  const ol = node("ol");
  for (const item of items) ol.append(node("li", null, item));
  box.append(node("strong", null, title), ol);
  return box;
}

function render(s) {
  shown = s;
  const panel = $("setup");
  panel.hidden = false;
  const body = [node("h2", null, t("setupTitle"))];
  if (s.state === "idle") {
    body.push(node("p", null, t("setupHint")), button(t("setupStart"), "primary", start));
  } else if (s.state === "waiting" && s.svg) {
    const img = node("img", "setup-qr");
    img.alt = "QR";
    img.src = "data:image/svg+xml;base64," + btoa(s.svg);  // an image: the SVG runs nothing
    const link = node("a", null, t("setupLink"));
    link.href = s.url; link.target = "_blank"; link.rel = "noopener noreferrer";
    body.push(node("p", null, t("setupWaiting")), img, link);
  } else if (s.state === "done" && s.result) {
    body.push(node("p", null, `${t("setupDone")} ${s.result.app_id}`));
    if (s.result.missing && s.result.missing.length) body.push(list(t("setupMissing"), s.result.missing));
    body.push(list(t("setupLeft"), s.result.steps || []));
  } else if (s.state === "failed") {
    body.push(node("p", "error", `${t("setupFailed")} ${s.error}`), button(t("setupRetry"), "primary", start));
  }
  if (s.state !== "waiting") body.push(button(t("setupLater"), "small", () => putOff(s)));
  panel.replaceChildren(...body);
  if (s.state === "waiting" && !polling) polling = setInterval(poll, 2000);
  if (s.state !== "waiting" && polling) { clearInterval(polling); polling = null; }
}

function putOff(s) {
  localStorage.setItem(LATER, stateOf(s));
  $("setup").hidden = true;
}

async function poll() {
  const s = await status("GET", "/api/setup/status");
  if (s) render(s);  // a 503 mid-scan keeps the QR code and the polling
}

async function start() {
  const s = await status("POST", "/api/setup/start");
  if (s) render(s);
}

// Above the chat while no answer can succeed (no key for a hosted model): what and the fix.
let llmProblem = null;
function showNotice() {
  const box = $("notice");
  box.hidden = !llmProblem;
  if (!llmProblem) return;
  box.replaceChildren(
    node("strong", null, t("cannotAnswer")),  // rebuilt on each 中/EN switch: no data-i18n
    node("p", null, problemText(llmProblem, "problem")),
    node("p", null, `→ ${problemText(llmProblem, "fix")}`),
  );
}

// After the 中/EN switch: the notice and the panel (unless put off) in the new language.
export function redrawSetup() {
  showNotice();
  if (shown && !$("setup").hidden) render(shown);
}

// After login: the notice, and the panel only while Lark is not configured (or a scan is
// under way); nothing while serve cannot say yet (503).
export async function checkSetup() {
  const s = await status("GET", "/api/setup/status");
  if (s) {
    llmProblem = s.llm || null;
    showNotice();
    const wanted = !s.configured || s.state !== "idle";
    if (wanted && localStorage.getItem(LATER) !== stateOf(s)) render(s);
  }
  $("setup").dataset.checked = "1";  // the answer is handled: what tests wait for, not a time
}
