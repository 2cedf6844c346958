// AI SDK: an answer cut at max_tokens ends with an error part, never a normal finish.
import { print, read, send, transport, userMessage } from "./chat.mjs";

const t = transport(process.argv[2]);
const got = await read((await send(t, `chat${Date.now()}`, [userMessage("Write a lot.")])).stream);
print({ types: got.types, errors: got.errors, last: got.chunks.at(-1) });
