// AI SDK: a client reading a turn whose worker is killed mid-answer and which resumes:
// the message it ends with (readUIMessageStream) is what stands, no dead text.
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

const base = process.argv[2];
const t = transport(base);
const got = await read((await send(t, `crash${Date.now()}`, [userMessage("Write.")])).stream);
print({ text: textOf(got.message), types: got.types, errors: got.errors,
        conversation: t.kept.conversation, token: t.kept.token });
