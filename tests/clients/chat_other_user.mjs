// AI SDK: two clients naming the same chat id, each with its own token, have two
// conversations; each loads only its own (GET /api/chat/{id}/messages).
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

const base = process.argv[2];
const chatId = `chat${Date.now()}`;
const owner = transport(base);
const mine = await read((await send(owner, chatId, [userMessage("Hello.")])).stream);
const other = transport(base);
const theirs = await read((await send(other, chatId, [userMessage("Let me in.")])).stream);
const reconnect = await other.reconnectToStream({ chatId });
async function loaded(t) {
  const response = await fetch(`${base}/api/chat/${chatId}/messages`, {
    headers: { authorization: `Bearer ${t.kept.token}` },
  });
  return (await response.json()).map((m) => [m.role, textOf(m)]);
}
print({ mine: mine.types, theirs: theirs.types, tokens: owner.kept.token !== other.kept.token,
        reconnect, loaded: { mine: await loaded(owner), theirs: await loaded(other) } });
