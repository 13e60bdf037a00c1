// The "scheduled tasks" view: each job with its schedule, next and last run, and its runs
// (the `schedule:<id>` session) on demand; a job can be removed from here.
import { locale, t } from "./i18n.js";
import { setMarkdown } from "./markdown.js";
import { $, api, node } from "./dom.js";

// The scheduler words triggers for Lark readers ("每天 09:00", "每周一、三 09:00", "every 30 min");
// the page says them in its own language, and anything unrecognised as the scheduler wrote it.
const EN_DAYS = { 一: "Mon", 二: "Tue", 三: "Wed", 四: "Thu", 五: "Fri", 六: "Sat", 日: "Sun" };
const EN_WORDS = [
  [/^每天 (\S+)$/, (m) => `daily ${m[1]}`],
  [/^工作日 (\S+)$/, (m) => `weekdays ${m[1]}`],
  [/^周末 (\S+)$/, (m) => `weekends ${m[1]}`],
  [/^每周(\S+) (\S+)$/, (m) => `every ${m[1].split("、").map((d) => EN_DAYS[d] || d).join(", ")} ${m[2]}`],
  [/^每月 (\d+) 日 (\S+)$/, (m) => `monthly on day ${m[1]}, ${m[2]}`],
];

export function triggerWords(words) {
  const every = /^every (\d+) min$/.exec(words || "");
  if (locale() === "zh-CN") return every ? `每 ${every[1]} 分钟` : words;
  for (const [pattern, say] of EN_WORDS) {
    const m = pattern.exec(words || "");
    if (m) return say(m);
  }
  return words;
}

function when(value) {
  if (value == null) return "—";
  return new Date(typeof value === "number" ? value * 1000 : value).toLocaleString(locale());
}

export async function loadSchedules() {
  const resp = await api("GET", "/api/schedules");
  const { schedules, timezone } = await resp.json();
  // two zones meet here, both named: a cron job's clock time is in the scheduler's zone, the
  // run times below in the browser's (09:30 Asia/Shanghai is 01:30 in UTC)
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const zoneNote = timezone ? ` (${timezone})` : "";
  const hereNote = t("yourTime").replace("{zone}", here);
  const box = $("schedules");
  box.replaceChildren();
  if (!schedules.length) box.append(node("p", "empty", t("noSchedules")));
  for (const job of schedules) {
    const card = node("section", "schedule");
    card.dataset.jobId = job.id;
    const head = node("div", "schedule-head");
    head.append(node("strong", null, job.id), node("span", "schedule-when", triggerWords(job.describe) + ((job.schedule || "").startsWith("every") ? "" : zoneNote)));
    const remove = node("button", "danger small", t("remove"));
    remove.addEventListener("click", async () => {
      if (!confirm(t("removeConfirm"))) return;
      await api("DELETE", `/api/schedules/${encodeURIComponent(job.id)}`);
      loadSchedules();
    });
    const fb = job.feedback || {};
    if (fb.up || fb.down) head.append(node("span", "feedback-badge", `👍 ${fb.up} · 👎 ${fb.down}`));
    head.append(remove);
    card.append(head, node("p", "schedule-prompt", job.prompt), node("p", "schedule-next", `${t("next")}: ${when(job.next_run)}${job.next_run == null ? "" : hereNote}`));
    const last = node("div", "schedule-last");
    last.append(node("div", "label", `${t("lastRun")}: ${job.last_run ? when(job.last_run.at) + hereNote : "—"}`));
    if (job.last_run) { const a = node("div", "answer"); setMarkdown(a, job.last_run.answer); last.append(a); }
    card.append(last);
    const runs = node("details", "schedule-runs");
    runs.append(node("summary", null, t("runs")));
    runs.addEventListener("toggle", async () => {
      if (!runs.open || runs.dataset.loaded) return;
      runs.dataset.loaded = "1";
      const r = await (await api("GET", `/api/schedules/${encodeURIComponent(job.id)}/runs`)).json();
      if (!r.runs.length) runs.append(node("p", "empty", t("noRuns")));
      for (const run of r.runs) {
        const item = node("div", "run");
        item.append(node("div", "label", when(run.at)));
        const a = node("div", "answer");
        setMarkdown(a, run.answer);
        item.append(a);
        runs.append(item);
      }
    });
    card.append(runs);
    box.append(card);
  }
}
