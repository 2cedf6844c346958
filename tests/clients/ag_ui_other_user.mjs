// AG-UI: two clients naming the same threadId, each with its own token (one made up),
// have two threads; each loads only its own (a run with no new question).
import { agent, print, run } from "./ag_ui.mjs";

const base = process.argv[2];
const owner = agent(base);
const mine = await run(owner, "Hello.");
const other = agent(base, { threadId: owner.threadId });
const theirs = await run(other, "Let me in.");
const guessed = agent(base, { threadId: owner.threadId, token: "not-the-token" });
const wrong = await run(guessed);
async function loaded(a) {
  const fresh = agent(base, { threadId: owner.threadId, token: a.kept.token });
  const got = await run(fresh);
  return { error: got.error, messages: fresh.messages.map((m) => [m.role, m.content]) };
}
print({ mine: { types: mine.types, error: mine.error },
        theirs: { types: theirs.types, error: theirs.error, status: theirs.status },
        wrong: { types: wrong.types, error: wrong.error, status: wrong.status,
                 messages: guessed.messages.length },
        loaded: { mine: await loaded(owner), theirs: await loaded(other) } });
