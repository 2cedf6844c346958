// AG-UI: a client that drops the connection mid-answer does not stop the turn: the
// conversation's answer is whole once the turn ends.
import { agent, print, run } from "./ag_ui.mjs";

const base = process.argv[2];
const a = agent(base);
const got = await run(a, "Write a lot.", {}, (event, running) => {
  if (event.type === "TEXT_MESSAGE_CONTENT") running.abortRun();
});
let conversation = null;
for (let i = 0; i < 300; i++) {
  const response = await fetch(`${base}/api/conversations/${a.kept.conversation}`, {
    headers: { authorization: `Bearer ${a.kept.token}` },
  });
  conversation = await response.json();
  if (conversation.running_turn_id === null) break;
  await new Promise((r) => setTimeout(r, 100));
}
print({ types: got.types, error: got.error, conversation });
