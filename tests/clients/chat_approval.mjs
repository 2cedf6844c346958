// AI SDK: tool-approval-request; the decision sent the way addToolApprovalResponse
// sends it (the tool part in "approval-responded", the next request's last message);
// approved, the rest of the turn streams into the same message; denied, tool-output-denied.
import { print, read, send, textOf, transport, userMessage } from "./chat.mjs";

async function decide(base, approved) {
  const t = transport(base);
  const chatId = `chat${Date.now()}${approved}`;
  const question = userMessage("Delete a.txt.");
  const first = await read((await send(t, chatId, [question])).stream);
  const message = structuredClone(first.message);
  // What AbstractChat.addToolApprovalResponse does to the message before it sends it.
  message.parts = message.parts.map((p) =>
    p.state === "approval-requested"
      ? { ...p, state: "approval-responded", approval: { ...p.approval, approved } }
      : p,
  );
  const sent = await send(t, chatId, [question, message], { messageId: message.id });
  const second = sent.stream ? await read(sent.stream, message) : null;
  return {
    first: { types: first.types, parts: first.message.parts },
    error: sent.error,
    second: second && { types: second.types, errors: second.errors, text: textOf(second.message),
                        parts: second.message.parts, id: second.message.id },
    firstId: first.message.id,
  };
}

const base = process.argv[2];
print({ approved: await decide(base, true), denied: await decide(base, false) });
