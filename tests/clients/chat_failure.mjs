// AI SDK: a failed turn ends with an error part carrying the notice (in Spanish here).
import { print, read, send, transport, userMessage } from "./chat.mjs";

const t = transport(process.argv[2], { headers: { "accept-language": "es" } });
const got = await read((await send(t, `chat${Date.now()}`, [userMessage("Hola.")])).stream);
print({ types: got.types, errors: got.errors, last: got.chunks.at(-1) });
