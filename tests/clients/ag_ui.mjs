// The AG-UI side: @ag-ui/client's HttpAgent against turnkeeper, its own event
// verification on. Each scenario script prints one JSON object on stdout.
import { HttpAgent } from "@ag-ui/client";

/** An HttpAgent on turnkeeper's /api/ag-ui that keeps the thread's token once given. */
export function agent(base, { threadId, token } = {}) {
  const kept = { token };
  const tracked = new HttpAgent({
    url: `${base}/api/ag-ui`,
    threadId,
    fetch: async (url, init) => {
      const headers = { ...(init.headers ?? {}) };
      if (kept.token) headers.authorization = `Bearer ${kept.token}`;
      const response = await fetch(url, { ...init, headers });
      kept.token = response.headers.get("x-turnkeeper-token") ?? kept.token;
      kept.status = response.status;
      kept.turn = response.headers.get("x-turnkeeper-turn") ?? kept.turn;
      kept.conversation = response.headers.get("x-turnkeeper-conversation") ?? kept.conversation;
      return response;
    },
  });
  tracked.kept = kept;
  return tracked;
}

/** One run: the events the agent accepted (after its verification), the outcome, the error. */
export async function run(agent, question, parameters = {}, during = () => {}) {
  if (question !== undefined) {
    agent.addMessage({ id: `u${Date.now()}${Math.random()}`, role: "user", content: question });
  }
  const events = [];
  let error = null;
  try {
    await agent.runAgent(parameters, {
      onEvent({ event }) {
        events.push(event);
        during(event, agent);
      },
    });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  return { events, types: events.map((e) => e.type), error, status: agent.kept.status };
}

export function text(events) {
  return events
    .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
    .map((e) => e.delta)
    .join("");
}

/** Stop the turn the agent's last response followed (Stop is not a dropped connection). */
export async function stop(base, agent) {
  const response = await fetch(`${base}/api/turns/${agent.kept.turn}/cancel`, {
    method: "POST",
    headers: { authorization: `Bearer ${agent.kept.token}` },
  });
  return response.status;
}

export function print(value) {
  process.stdout.write(JSON.stringify(value) + "\n");
}
