// AI SDK: a question answered as a streamed text part.
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

const t = transport(process.argv[2]);
const chatId = `chat${Date.now()}`;
const sent = await send(t, chatId, [userMessage("Say hello.")]);
const got = sent.stream ? await read(sent.stream) : null;
print({ error: sent.error, headers: t.kept, types: got?.types, errors: got?.errors,
        text: textOf(got?.message), parts: got?.message?.parts, finish: got?.chunks.at(-1) });
