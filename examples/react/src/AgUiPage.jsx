// @ag-ui/client's HttpAgent on turnkeeper's /api/ag-ui. A reload runs the known thread
// with no new message: turnkeeper answers MESSAGES_SNAPSHOT, then the active run if any.
import { HttpAgent } from "@ag-ui/client";
import { useEffect, useMemo, useState } from "react";
import { Composer, startOver } from "./Composer.jsx";
import { Conversation, SERVER } from "./server.js";

export function AgUiPage() {
  const conversation = useMemo(() => new Conversation("turnkeeper.ag-ui"), []);
  const agent = useMemo(
    () =>
      new HttpAgent({
        url: `${SERVER}/api/ag-ui`,
        threadId: conversation.id,
        fetch: conversation.fetch,
      }),
    [conversation],
  );
  const [messages, setMessages] = useState([]);
  const [busy, setBusy] = useState(false);
  const [interrupts, setInterrupts] = useState([]);
  const [error, setError] = useState(null);

  async function run(parameters = {}) {
    setBusy(true);
    setInterrupts([]);
    setError(null);
    try {
      await agent.runAgent(parameters, {
        onRunFinishedEvent: ({ event }) => setInterrupts(event.outcome?.interrupts ?? []),
        onRunErrorEvent: ({ event }) => setError(event.message),
      });
    } catch (e) {
      setError(String(e?.message ?? e));
    } finally {
      setBusy(false);
    }
  }

  useEffect(() => {
    const { unsubscribe } = agent.subscribe({
      onMessagesChanged: () => setMessages([...agent.messages]),
    });
    if (conversation.known) run(); // the conversation so far, then its running turn
    return unsubscribe;
  }, [agent]);

  function ask(text) {
    agent.addMessage({ id: `u${Date.now()}`, role: "user", content: text });
    run();
  }

  function decide(interrupt, approved) {
    const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { approved } }];
    run({ resume });
  }

  const results = Object.fromEntries(
    messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.content]),
  );
  return (
    <main className="ag-ui">
      {messages
        .filter((m) => m.role !== "tool")
        .map((message) => (
          <Message key={message.id} message={message} results={results} />
        ))}
      {interrupts.map((interrupt) => (
        <p key={interrupt.id} className="approval">
          {interrupt.message}
          <button className="approve" onClick={() => decide(interrupt, true)}>Approve</button>
          <button className="deny" onClick={() => decide(interrupt, false)}>Deny</button>
        </p>
      ))}
      {error && <p className="error">{error}</p>}
      <Composer
        busy={busy}
        onSend={ask}
        onStop={() => conversation.stop()}
        onNew={() => startOver(conversation)}
      />
    </main>
  );
}

function Message({ message, results }) {
  if (message.role === "activity") {
    // A tool's caption; a card (activityType "card") is left to the application to draw.
    return message.activityType === "caption" && <p className="activity">{message.content.text}</p>;
  }
  return (
    <section className={`message ${message.role}`}>
      {message.content && <p className="text">{message.content}</p>}
      {(message.toolCalls ?? []).map((call) => (
        <div key={call.id} className="tool">
          <code className="tool-call">
            {call.function.name}({compact(call.function.arguments)})
          </code>
          {call.id in results && <pre className="tool-output">{results[call.id]}</pre>}
        </div>
      ))}
    </section>
  );
}

/** The call's arguments as JSON without spaces (as the chat page shows them), once whole. */
function compact(args) {
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return args;
  }
}
