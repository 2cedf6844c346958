/**
 * The conversation a widget keeps (its id and token, and the turn it follows) in
 * localStorage, so a reload restores it. Storage may be off (private mode): then nothing is
 * kept and the chat still works.
 */

export class Saved {
  /** `storage`: where to keep it, looked up when used (reading it may throw). */
  constructor(key, storage = () => globalThis.localStorage) {
    this.key = key;
    this.storage = storage;
  }

  /** The conversation kept, or null (none, unreadable, or no storage). */
  read() {
    try {
      return JSON.parse(this.storage().getItem(this.key) || "null");
    } catch (error) {
      return null;
    }
  }

  /** Keep `value`, or forget the conversation (null). */
  write(value) {
    try {
      if (value) this.storage().setItem(this.key, JSON.stringify(value));
      else this.storage().removeItem(this.key);
    } catch (error) {
      // Storage is off (private mode): the chat still works, a reload starts afresh.
    }
  }
}

/** What is kept of a conversation once no turn of it is being followed. */
export function kept(conversation) {
  return { conversation_id: conversation.conversation_id, token: conversation.token };
}

/** Whether a kept conversation can be opened: it has an id, and a token unless readers sign
 *  in (their cookie says who they are). */
export function openable(saved, users) {
  return Boolean(saved && saved.conversation_id && (saved.token || users));
}
