// AG-UI: a client reading a turn whose worker is killed mid-answer and which resumes:
// the thread's messages it ends with are what stands, no dead text.
import { agent, print, run } from "./ag_ui.mjs";

const base = process.argv[2];
const a = agent(base);
const got = await run(a, "Write.");
const said = a.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "");
print({ text: said.join(""), types: got.types, error: got.error,
        conversation: a.kept.conversation, token: a.kept.token });
