// AG-UI: another client naming the same threadId without its token is refused (404).
import { agent, print, run } from "./ag_ui.mjs";

const base = process.argv[2];
const owner = agent(base);
const mine = await run(owner, "Hello.");
const other = agent(base, { threadId: owner.threadId });
const theirs = await run(other, "Let me in.");
const guessed = agent(base, { threadId: owner.threadId, token: "not-the-token" });
const wrong = await run(guessed, "Let me in.");
print({ mine: { types: mine.types, error: mine.error },
        theirs: { types: theirs.types, error: theirs.error, status: theirs.status },
        wrong: { types: wrong.types, error: wrong.error, status: wrong.status } });
