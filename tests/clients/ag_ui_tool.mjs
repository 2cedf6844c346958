// AG-UI: a server-side tool, its call and result, then the answer.
import { agent, print, run, text } from "./ag_ui.mjs";

const a = agent(process.argv[2]);
const got = await run(a, "Look up tea.");
print({ ...got, text: text(got.events) });
