// The consent card: what a tool wants to do, the three answers, and the outcome once resolved.
// Its words carry data-i18n, so the 中/EN switch redraws a card already shown.
import { applyStrings, label } from "./i18n.js";
import { $, api, node } from "./dom.js";

function scrollDown() { const m = $("messages"); m.scrollTop = m.scrollHeight; }

export function consentCard(value) {
  const card = node("div", "consent-card");
  card.dataset.requestId = value.request_id;
  card.append(label("div", "consent-title", "consentTitle"));
  const what = node("div", "consent-what");
  what.append(node("code", null, value.tool), document.createTextNode(" " + value.description));
  card.append(what);
  if (value.always) card.append(label("div", "consent-always", "alwaysAsk"));
  if (value.sources && value.sources.length) {  // untrusted text read this turn raised the bar
    const list = node("ul", "consent-sources");
    for (const source of value.sources) list.append(node("li", null, source));
    card.append(label("div", "consent-sources-title", "untrusted"), list);
  }
  const expiry = node("div", "consent-expiry");
  const at = node("span");
  at.dataset.i18nTime = value.expires_at;
  expiry.append(label("span", null, "expires"), ": ", at);
  card.append(expiry);
  const buttons = node("div", "consent-buttons");
  const choices = [["allow_once", "allowOnce", "primary"]];
  if (!value.always) choices.push(["allow_session", "allowSession", ""]);
  choices.push(["deny", "deny", "danger"]);
  for (const [decision, key, cls] of choices) {
    const b = label("button", cls, key);
    b.type = "button";
    b.dataset.decision = decision;
    b.addEventListener("click", async () => {
      for (const other of buttons.querySelectorAll("button")) other.disabled = true;
      const resp = await api("POST", `/api/consent/${encodeURIComponent(value.request_id)}`, { decision });
      if (!resp.ok && resp.status !== 409) for (const other of buttons.querySelectorAll("button")) other.disabled = false;
    });
    buttons.append(b);
  }
  card.append(buttons);
  $("messages").append(card);
  applyStrings(expiry);  // the expiry's clock time, in the page's language
  scrollDown();
}

export function resolveConsent(value) {
  const card = document.querySelector(`.consent-card[data-request-id="${CSS.escape(value.request_id)}"]`);
  if (!card) return;
  const words = { allow_once: "allowed", allow_session: "allowed", deny: "denied", expired: "expired", cancelled: "cancelled" };
  card.classList.add("resolved", value.decision.startsWith("allow") ? "allowed" : "refused");
  const key = words[value.decision];
  const outcome = key ? label("span", "consent-outcome", key) : node("span", "consent-outcome", value.decision);
  card.querySelector(".consent-buttons").replaceChildren(outcome);
}
