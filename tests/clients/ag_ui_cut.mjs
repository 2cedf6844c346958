// AG-UI: an answer cut at max_tokens: MESSAGES_SNAPSHOT withdraws the partial text,
// then RUN_ERROR with code "truncated".
import { agent, print, run, text } from "./ag_ui.mjs";

const a = agent(process.argv[2]);
const got = await run(a, "Write a lot.");
const snapshot = got.events.find((e) => e.type === "MESSAGES_SNAPSHOT");
print({
  types: got.types, error: got.error, streamed: text(got.events),
  snapshot: snapshot?.messages ?? null,
  runError: got.events.find((e) => e.type === "RUN_ERROR") ?? null,
  messages: a.messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null })),
});
