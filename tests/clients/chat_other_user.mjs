// AI SDK: another client naming the same chat id without its token is refused (404).
import { print, read, send, transport, userMessage } from "./chat.mjs";

const base = process.argv[2];
const chatId = `chat${Date.now()}`;
const owner = transport(base);
const mine = await read((await send(owner, chatId, [userMessage("Hello.")])).stream);
const other = transport(base);
const theirs = await send(other, chatId, [userMessage("Let me in.")]);
let resumed = null;
try {
  resumed = await other.reconnectToStream({ chatId });
} catch (e) {
  resumed = String(e?.message ?? e);
}
print({ mine: mine.types, theirs: { error: theirs.error, status: other.kept.status },
        reconnect: { result: resumed, status: other.kept.status } });
