// useChat (@ai-sdk/react) with DefaultChatTransport on turnkeeper's /api/chat.
// A reload loads the conversation (GET /api/chat/{id}/messages) and `resume: true`
// follows the turn still running (GET /api/chat/{id}/stream).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useEffect, useMemo, useState } from "react";
import { Composer, startOver } from "./Composer.jsx";
import { Conversation, SERVER } from "./server.js";

export function ChatPage() {
  const conversation = useMemo(() => new Conversation("turnkeeper.chat"), []);
  const [earlier, setEarlier] = useState(conversation.known ? null : []);
  useEffect(() => {
    if (earlier) return;
    conversation
      .fetch(`${SERVER}/api/chat/${encodeURIComponent(conversation.id)}/messages`)
      .then((response) => (response.ok ? response.json() : []))
      .then(setEarlier, () => setEarlier([]));
  }, [conversation, earlier]);
  if (!earlier) return <p className="loading">Loading the conversation…</p>;
  return <Chat conversation={conversation} earlier={earlier} />;
}

function Chat({ conversation, earlier }) {
  const transport = useMemo(
    () => new DefaultChatTransport({ api: `${SERVER}/api/chat`, fetch: conversation.fetch }),
    [conversation],
  );
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: conversation.id,
    messages: earlier,
    transport,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const decide = (approval, approved) => addToolApprovalResponse({ id: approval.id, approved });
  return (
    <main className="chat">
      {messages.map((message) => (
        <section key={message.id} className={`message ${message.role}`}>
          {message.parts.map((part, n) => (
            <Part key={n} part={part} decide={decide} />
          ))}
        </section>
      ))}
      {error && <p className="error">{error.message}</p>}
      <Composer
        busy={status === "submitted" || status === "streaming"}
        onSend={(text) => sendMessage({ text })}
        onStop={() => conversation.stop()}
        onNew={() => startOver(conversation)}
      />
    </main>
  );
}

function Part({ part, decide }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (part.type === "data-activity") return <p className="activity">{part.data.text}</p>;
  if (part.type !== "dynamic-tool" && !part.type.startsWith("tool-")) return null;
  const asked = part.state === "approval-requested";
  return (
    <div className="tool" data-state={part.state}>
      <code className="tool-call">
        {part.toolName ?? part.type.slice(5)}({JSON.stringify(part.input)})
      </code>
      {part.state === "output-available" && (
        <pre className="tool-output">{shown(part.output)}</pre>
      )}
      {part.state === "output-error" && <pre className="tool-error">{part.errorText}</pre>}
      {part.state === "output-denied" && <p className="tool-denied">Denied</p>}
      {asked && (
        <p className="approval">
          <button className="approve" onClick={() => decide(part.approval, true)}>Approve</button>
          <button className="deny" onClick={() => decide(part.approval, false)}>Deny</button>
        </p>
      )}
    </div>
  );
}

function shown(output) {
  return typeof output === "string" ? output : JSON.stringify(output);
}
