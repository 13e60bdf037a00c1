// The "memory" view: what the bot remembers about the page's owner, and the chats' shared
// memories (GET /api/memory); never other people's own memories.
import { locale, t } from "./i18n.js";
import { $, api, node } from "./dom.js";

export function hideMemory() {
  $("memory-view").hidden = true;
  $("nav-memory").classList.remove("active");
}

export async function showMemory() {
  for (const id of ["chat-view", "schedules-view"]) $(id).hidden = true;
  for (const id of ["nav-chat", "nav-schedules"]) $(id).classList.remove("active");
  $("memory-view").hidden = false;
  $("nav-memory").classList.add("active");
  document.body.classList.remove("menu-open");
  await loadMemory();
}

// Fetches and draws the list: on opening, and on the 中/EN switch while the view is open (as
// the schedules do), without showMemory's closing of the phone menu.
export async function loadMemory() {
  const { memories } = await (await api("GET", "/api/memory")).json();
  render(memories);
}

function render(memories) {
  const box = $("memories");
  box.replaceChildren();
  if (!memories.length) box.append(node("p", "empty", t("noMemories")));
  for (const m of memories) {
    const item = node("div", "memory-item");
    item.dataset.memoryId = m.id;
    const where = m.scope === "me" ? t("aboutYou") : `${t("thisChat")} ${m.chat_id}`;
    const when = new Date(m.created_at * 1000).toLocaleDateString(locale());
    const flag = m.untrusted || !m.author_owner ? ` · ${t("untrustedMemory")}` : "";
    item.append(
      node("div", "label", `[${m.id}] ${where} · ${t("savedBy")} ${m.author} · ${when}${flag}`),
      node("div", null, m.content),
    );
    box.append(item);
  }
}
