// The "Lark accounts" panel: who has authorized the bot to act as them (/auth), with what
// scopes and until when. GET /api/auth never carries a token.
import { locale, t } from "./i18n.js";
import { $, api, node } from "./dom.js";

export async function loadAccounts() {
  const box = $("lark-accounts");
  if (!box) return;
  const resp = await api("GET", "/api/auth");
  if (!resp.ok) { box.replaceChildren(); return; }
  const { authorizations } = await resp.json();
  box.replaceChildren(node("h2", null, t("larkAccounts")));
  if (!authorizations.length) box.append(node("p", "empty", t("noAccounts")));
  for (const a of authorizations) {
    const card = node("section", "account");
    const until = new Date(a.refresh_expires_at * 1000).toLocaleString(locale());
    card.append(
      node("strong", null, `${a.name} (${a.open_id})`),
      node("p", "account-scopes", a.scopes.filter((s) => s !== "offline_access").join(", ")),
      node("p", "label", `${t("renewableUntil")} ${until}`),
    );
    box.append(card);
  }
}
