// AI SDK: a server-side tool as a dynamic tool part, its output, then the answer.
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

const t = transport(process.argv[2]);
const sent = await send(t, `chat${Date.now()}`, [userMessage("Look up tea.")]);
const got = await read(sent.stream);
print({ error: sent.error, types: got.types, errors: got.errors, text: textOf(got.message),
        parts: got.message.parts });
