// AI SDK: a stream dropped mid-answer does not stop the turn; reconnectToStream
// (GET /api/chat/{id}/stream) replays the active turn from its first part and the
// client rebuilds the whole message; once the turn is over it answers 204 (null).
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

const t = transport(process.argv[2]);
const chatId = `chat${Date.now()}`;
const abort = new AbortController();
const sent = await send(t, chatId, [userMessage("Write a lot.")], { abortSignal: abort.signal });
const dropped = await read(sent.stream, undefined, (chunk) => {
  if (chunk.type === "text-delta") abort.abort();
});
const stream = await t.reconnectToStream({ chatId });
const again = stream ? await read(stream) : null;
const after = await t.reconnectToStream({ chatId });
print({
  dropped: dropped.types,
  reconnected: again && { types: again.types, text: textOf(again.message), errors: again.errors },
  afterwards: after === null ? null : "a stream",
  status: t.kept.status,
});
