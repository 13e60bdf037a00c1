// The official AG-UI client (@ag-ui/client's HttpAgent) against a running `larkbot` web server.
//
//   node tests/agui_client.mjs BASE_URL TOKEN [--consent allow_once|allow_session|deny] [--stop]
//        MESSAGE...
//
// Each MESSAGE is one run on the same agent (so the same thread). Every event the client takes
// is printed as one JSON line {"event": ...}; after each run {"run": {"messages": [...]}} with
// the agent's conversation so far, or {"error": "..."} when the client rejected the stream.
// --consent answers each consent_request card; --stop stops each run as soon as it started.
import { HttpAgent } from "@ag-ui/client";

const [base, token, ...rest] = process.argv.slice(2);
let consent = null;
let stop = false;
const turns = [];
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === "--consent") consent = rest[++i];
  else if (rest[i] === "--stop") stop = true;
  else turns.push(rest[i]);
}
const auth = { Authorization: `Bearer ${token}` };
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function post(path, body) {
  const resp = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  if (!resp.ok) throw new Error(`${path}: ${resp.status} ${await resp.text()}`);
}

const agent = new HttpAgent({ url: `${base}/chat`, headers: auth });
agent.subscribe({
  async onEvent({ event }) {
    print({ event });
    if (stop && event.type === "RUN_STARTED") await post(`/api/runs/${event.runId}/stop`);
    if (consent && event.type === "CUSTOM" && event.name === "consent_request") {
      await post(`/api/consent/${event.value.request_id}`, { decision: consent });
    }
  },
});

for (const [n, text] of turns.entries()) {
  agent.addMessage({ id: `user-${n}`, role: "user", content: text });
  try {
    await agent.runAgent({
      runId: `run-${n}-${Date.now()}`,
      tools: [{ name: "client_side", description: "a tool larkbot does not run", parameters: {} }],
      context: [{ description: "page", value: "tests" }],
      forwardedProps: { from: "agui_client.mjs" },
    });
    print({ run: { threadId: agent.threadId, messages: agent.messages } });
  } catch (err) {
    print({ error: String(err?.message ?? err) });
  }
}
