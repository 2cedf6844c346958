// AG-UI: a turn that waits for approval ends its run with an interrupt; a resume
// decides it and streams the rest of the same turn; a replayed resume is harmless;
// an unknown interrupt is RUN_ERROR.
import { agent, print, run, text } from "./ag_ui.mjs";

const a = agent(process.argv[2]);
const first = await run(a, "Delete a.txt.");
const finished = first.events.find((e) => e.type === "RUN_FINISHED");
const interrupts = finished?.outcome?.interrupts ?? [];
const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } }));
const second = await run(a, undefined, { resume });
const replayed = await run(a, undefined, { resume });
const unknown = await run(a, undefined, {
  resume: [{ interruptId: "t_nothing:toolu_nothing", status: "resolved", payload: { approved: true } }],
});
print({
  first: { types: first.types, error: first.error, outcome: finished?.outcome ?? null,
           events: first.events },
  second: { types: second.types, error: second.error, text: text(second.events),
            events: second.events },
  replayed: { types: replayed.types, error: replayed.error },
  unknown: { types: unknown.types, error: unknown.error,
             event: unknown.events.find((e) => e.type === "RUN_ERROR") ?? null },
});
