// AG-UI: a question answered as streamed text.
import { agent, print, run, text } from "./ag_ui.mjs";

const base = process.argv[2];
const a = agent(base);
const first = await run(a, "Say hello.");
print({ ...first, text: text(first.events), token: Boolean(a.kept.token), threadId: a.threadId,
        messages: a.messages.map((m) => ({ role: m.role, content: m.content })) });
