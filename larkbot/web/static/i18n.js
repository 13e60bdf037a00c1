// UI strings in English and Chinese; the choice follows the browser, the 中/EN button flips it.
const STRINGS = {
  en: {
    login: "Log in", loginHint: "Paste the web token `larkbot serve` printed (or web.token).",
    wrongToken: "Wrong token.", tooMany: "Too many attempts; wait a minute.",
    chat: "Chat", schedules: "Scheduled tasks", logout: "Log out", newChat: "New chat",
    send: "Send", stop: "Stop", placeholder: "Message larkbot…", you: "You", bot: "larkbot",
    consentTitle: "Allow this action?", allowOnce: "Allow once",
    allowSession: "Allow for this session", deny: "Deny", alwaysAsk: "Dangerous: asked every time",
    expires: "expires", allowed: "Allowed", denied: "Denied", expired: "No answer: refused",
    cancelled: "Cancelled", running: "running…", thinking: "Thinking", failed: "failed", done: "done",
    stopped: "Stopped.", error: "Error", noSchedules: "No scheduled tasks yet.",
    next: "Next run", lastRun: "Last run", runs: "Runs", noRuns: "No runs yet.",
    remove: "Remove", removeConfirm: "Remove this scheduled task?", deleteChat: "Delete",
    reconnecting: "Connection lost; reconnecting…", untitled: "(untitled)",
    untrusted: "Asked because this turn read text you did not write:",
    cardError: "This card could not be shown",
    examplesTitle: "Try one of these:", example1: "What can you do?",
    example2: "Search the web for today's top tech news and summarise it",
    example3: "Every weekday at 09:00, remind me to check my calendar",
    example4: "Compare three budget phones in a table",
    yourTime: " (your time, {zone})",
    memory: "Memory", noMemories: "Nothing remembered yet.", aboutYou: "about you",
    thisChat: "chat", savedBy: "saved by", untrustedMemory: "untrusted",
    larkAccounts: "Lark accounts (/auth)", noAccounts: "Nobody has authorized the bot yet.",
    renewableUntil: "renewable until",
    cannotAnswer: "The bot cannot answer yet",
    // the setup panel (setup.js)
    setupTitle: "Connect Lark",
    setupHint: "Scan once with the Lark / Feishu app: it creates the bot's Lark app with every permission it needs, and makes you its owner.",
    setupStart: "Show the QR code", setupLater: "Later",
    setupWaiting: "Scan with the Lark / Feishu app and confirm. Waiting…",
    setupLink: "Or open this link where you are signed in to Lark", setupDone: "Lark app created:",
    setupLeft: "Left to do:", setupMissing: "Not granted yet:", setupFailed: "Setup failed:",
    setupRetry: "Try again",
  },
  zh: {
    login: "登录", loginHint: "粘贴 `larkbot serve` 打印的 Web 令牌（或 web.token）。",
    wrongToken: "令牌不正确。", tooMany: "尝试次数过多，请稍等一分钟。",
    chat: "对话", schedules: "定时任务", logout: "退出", newChat: "新对话",
    send: "发送", stop: "停止", placeholder: "给 larkbot 发消息…", you: "你", bot: "larkbot",
    consentTitle: "允许这个操作吗？", allowOnce: "仅允许这一次",
    allowSession: "本会话内允许", deny: "拒绝", alwaysAsk: "高危操作：每次都会询问",
    expires: "过期时间", allowed: "已允许", denied: "已拒绝", expired: "未回应：已拒绝",
    cancelled: "已取消", running: "运行中…", thinking: "思考过程", failed: "失败", done: "完成",
    stopped: "已停止。", error: "错误", noSchedules: "还没有定时任务。",
    next: "下次运行", lastRun: "最近一次运行", runs: "运行记录", noRuns: "还没有运行记录。",
    remove: "删除", removeConfirm: "删除这个定时任务？", deleteChat: "删除",
    reconnecting: "连接中断，正在重连…", untitled: "（无标题）",
    untrusted: "之所以询问，是因为本轮读取了并非你写的内容：",
    cardError: "此卡片无法显示",
    examplesTitle: "可以试试：", example1: "你能做什么？",
    example2: "搜索今天的科技要闻并总结",
    example3: "每个工作日早上 9 点提醒我看日程",
    example4: "用表格对比三款千元手机",
    yourTime: "（你的时间：{zone}）",
    memory: "记忆", noMemories: "还没有记住任何事。", aboutYou: "关于你",
    thisChat: "群聊", savedBy: "保存者", untrustedMemory: "不可信",
    larkAccounts: "飞书授权（/授权）", noAccounts: "还没有人授权。", renewableUntil: "可续期至",
    cannotAnswer: "机器人暂时无法回答",
    setupTitle: "接入飞书",
    setupHint: "用飞书 / Lark App 扫一次码：自动创建机器人所需的应用与全部权限，并让你成为主人。",
    setupStart: "显示二维码", setupLater: "稍后", setupWaiting: "请用飞书 / Lark App 扫码并确认，等待中…",
    setupLink: "或在已登录飞书的设备上打开此链接", setupDone: "已创建飞书应用：", setupLeft: "还需完成：",
    setupMissing: "尚未授予：", setupFailed: "接入失败：", setupRetry: "重试",
    // serve's set-up mistakes (larkbot/misconfig.py) by key; in English the server's own words
    "llm_key.problem": "llm.api_key 为空，而 llm.base_url 指向托管服务：每次回答都会失败（401）",
    "llm_key.fix": "设置 LLM_API_KEY（或 llm.api_key）；本地模型服务（Ollama、vLLM）无需密钥：把 llm.base_url（LLM_BASE_URL）指向它",
  },
};

let lang = localStorage.getItem("larkbot.lang")
  || ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en");

export function t(key) {
  return (STRINGS[lang] && STRINGS[lang][key]) || STRINGS.en[key] || key;
}

// A set-up mistake the server reported ({key, problem, fix}): `field` in Chinese when this page
// has it, else the server's words (so the English never drifts from what serve logs).
export function problemText(problem, field) {
  return (lang === "zh" && STRINGS.zh[`${problem.key}.${field}`]) || problem[field];
}

// The BCP 47 tag of the current language (dates and times are written in it).
export function locale() { return lang === "zh" ? "zh-CN" : "en"; }

// A string with `code` spans: the code as <code>, never as HTML (no innerHTML).
export function setText(el, text) {
  el.replaceChildren(...text.split("`").map((part, i) => {
    if (i % 2 === 0) return document.createTextNode(part);
    const code = document.createElement("code");
    code.textContent = part;
    return code;
  }));
}

// Page chrome in the current language: [data-i18n] text (also what messages already shown
// carry: consent cards, tool states, labels), [data-i18n-title] tooltips, [data-i18n-time]
// clock times (ISO), so the 中/EN switch redraws them; what the model wrote is left alone.
export function applyStrings(root = document) {
  document.documentElement.lang = locale();
  for (const el of root.querySelectorAll("[data-i18n]")) setText(el, t(el.dataset.i18n));
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
  for (const el of root.querySelectorAll("[data-i18n-time]")) {
    el.textContent = new Date(el.dataset.i18nTime).toLocaleTimeString(locale());
  }
  const input = document.getElementById("input");
  if (input) input.placeholder = t("placeholder");
}

// An element whose text is the string `key`, redrawn in the other language by applyStrings.
export function label(tag, cls, key) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  el.dataset.i18n = key;
  setText(el, t(key));
  return el;
}

export function toggleLanguage() {
  lang = lang === "zh" ? "en" : "zh";
  localStorage.setItem("larkbot.lang", lang);
  applyStrings();
}
