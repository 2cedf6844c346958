import { useState } from "react";

/** The question box: Send while idle, Stop while a turn runs; New chat starts over. */
export function Composer({ busy, onSend, onStop, onNew }) {
  const [text, setText] = useState("");
  function submit(event) {
    event.preventDefault();
    if (!text.trim() || busy) return;
    onSend(text);
    setText("");
  }
  return (
    <form className="composer" onSubmit={submit}>
      <input value={text} onChange={(e) => setText(e.target.value)} placeholder="Ask something…" />
      {busy ? (
        <button type="button" className="stop" onClick={onStop}>Stop</button>
      ) : (
        <button type="submit" className="send">Send</button>
      )}
      <button type="button" className="new" onClick={onNew}>New chat</button>
    </form>
  );
}

/** Forget the conversation and reload: the page starts a new one. */
export function startOver(conversation) {
  conversation.forget();
  location.reload();
}
