// AG-UI: a failed turn is RUN_ERROR, its notice in the reader's language (Spanish here).
import { HttpAgent } from "@ag-ui/client";
import { agent, print, run } from "./ag_ui.mjs";

const a = agent(process.argv[2]);
a.headers = { "accept-language": "es" };
const got = await run(a, "Hola.");
print({ ...got, runError: got.events.find((e) => e.type === "RUN_ERROR") ?? null });
