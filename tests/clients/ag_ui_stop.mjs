// AG-UI: Stop (POST /api/turns/{turn}/cancel, the turn named by x-turnkeeper-turn) ends
// the run with outcome "cancelled"; a resume of a turn that stopped waiting is RUN_ERROR
// "expired".
import { agent, print, run, stop } from "./ag_ui.mjs";

const base = process.argv[2];
const a = agent(base);
let stopped = null;
const got = await run(a, "Write a lot.", {}, (event, running) => {
  if (event.type === "TEXT_MESSAGE_CONTENT" && stopped === null) {
    stopped = "asked";
    stop(base, running).then((status) => (stopped = status));
  }
});
const waits = agent(base);
const first = await run(waits, "Delete b.txt.");
const interrupts = first.events.find((e) => e.type === "RUN_FINISHED")?.outcome?.interrupts ?? [];
const cancelled = await stop(base, waits);
const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } }));
const late = await run(waits, undefined, { resume });
print({
  stopped: { types: got.types, error: got.error, status: stopped,
             outcome: got.events.find((e) => e.type === "RUN_FINISHED")?.outcome ?? null },
  expired: { cancelled, types: late.types, error: late.error,
             event: late.events.find((e) => e.type === "RUN_ERROR") ?? null },
});
