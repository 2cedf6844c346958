// The AI SDK side: the `ai` package's DefaultChatTransport and readUIMessageStream
// against turnkeeper's /api/chat. Each scenario script prints one JSON object.
import { DefaultChatTransport, readUIMessageStream } from "ai";

/** A transport that keeps the chat's token once turnkeeper sends it. */
export function transport(base, { token, headers = {} } = {}) {
  const kept = { token };
  const t = new DefaultChatTransport({
    api: `${base}/api/chat`,
    fetch: async (url, init) => {
      const sent = { ...(init?.headers ?? {}), ...headers };
      if (kept.token) sent.authorization = `Bearer ${kept.token}`;
      const response = await fetch(url, { ...init, headers: sent });
      kept.token = response.headers.get("x-turnkeeper-token") ?? kept.token;
      kept.status = response.status;
      kept.conversation = response.headers.get("x-turnkeeper-conversation") ?? kept.conversation;
      kept.protocol = response.headers.get("x-vercel-ai-ui-message-stream");
      kept.type = response.headers.get("content-type");
      kept.cache = response.headers.get("cache-control");
      return response;
    },
  });
  t.kept = kept;
  return t;
}

export function userMessage(text) {
  return { id: `u${Date.now()}${Math.random()}`, role: "user", parts: [{ type: "text", text }] };
}

/** Read a UI message stream: every chunk, the message rebuilt, and the errors reported. */
export async function read(stream, message, during = () => {}) {
  const [raw, parts] = stream.tee();
  const chunks = [];
  const collecting = (async () => {
    const reader = raw.getReader();
    for (;;) {
      const { done, value } = await reader.read().catch((e) => ({ done: true, error: e }));
      if (done) break;
      chunks.push(value);
      during(value);
    }
  })();
  const errors = [];
  let last = message ?? null;
  try {
    for await (const m of readUIMessageStream({
      message: message ? structuredClone(message) : undefined,
      stream: parts,
      onError: (e) => errors.push(String(e?.message ?? e)),
    })) {
      last = m;
    }
  } catch (e) {
    errors.push(String(e?.message ?? e));
  }
  await collecting;
  return { chunks, types: chunks.map((c) => c.type), message: last, errors };
}

export async function send(t, chatId, messages, extra = {}) {
  try {
    const stream = await t.sendMessages({
      chatId, messages, trigger: "submit-message", messageId: undefined,
      abortSignal: undefined, ...extra,
    });
    return { stream, error: null };
  } catch (e) {
    return { stream: null, error: String(e?.message ?? e) };
  }
}

export function textOf(message) {
  return (message?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
}

export function print(value) {
  process.stdout.write(JSON.stringify(value) + "\n");
}
