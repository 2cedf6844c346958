/**
 * The reader's conversations (readers sign in): the list that opens over the log, each
 * conversation a button that opens it, with Rename and Delete beside it (Delete asks
 * first, in the row itself). The list closes on a click outside it, on Escape (element.js)
 * and when a question is sent, so it never covers the answer or an approval card.
 */

import { icon, isText, make } from "./cards.js";

const PENCIL =
  "M3 17.25V21h3.75L17.8 9.94l-3.75-3.75L3 17.25zM20.7 7.04a1 1 0 0 0 0-1.41l-2.34-2.34" +
  "a1 1 0 0 0-1.41 0l-1.83 1.83 3.75 3.75 1.83-1.83z";
const BIN = "M6 19c0 1.1.9 2 2 2h8c1.1 0 2-.9 2-2V7H6v12zM19 4h-3.5l-1-1h-5l-1 1H5v2h14V4z";

/** A button with a class and its text (or, with `path`, an icon labelled by the text). */
function button(className, label, path = null) {
  const made = make("button", className, path ? undefined : label);
  made.type = "button";
  if (path) {
    made.setAttribute("aria-label", label);
    made.title = label;
    made.append(icon(path));
  }
  return made;
}

export class Threads {
  /** The list of `chat` (the element: its `history` and `historyList`, its client, its
   *  words, and `switchTo` to open or leave a conversation). */
  constructor(chat) {
    this.chat = chat;
    this.history = chat.history;
    this.list = chat.historyList;
    this.history.addEventListener("toggle", () => this.history.open && this.show());
    document.addEventListener("pointerdown", (event) => {
      if (this.history.open && !event.composedPath().includes(this.history)) this.close();
    });
  }

  close() {
    this.history.open = false;
  }

  /** The reader's conversations, newest first; the one shown (`current`) marked. The rows
   *  of the last opening go first: a Rename or Delete begun on one of them would be lost
   *  when the list arrives and replaces it. */
  async show() {
    const chat = this.chat;
    this.list.replaceChildren();
    const listed = await chat.client.conversations();
    if (!listed.ok) return chat.trouble.failed(listed, true); // the reader asked: said at once
    const threads = (listed.body && listed.body.conversations) || [];
    const known = (Array.isArray(threads) ? threads : []).filter(
      (thread) => thread && isText(thread.conversation_id),
    );
    const items = known.map((thread) => this.item(thread));
    const none = make("li", "history-empty", chat.text("ui.no_conversations") || "");
    this.list.replaceChildren(...(items.length ? items : [none]));
  }

  /** One conversation: its title and when it began (opens it), then Rename and Delete. */
  item(thread) {
    const { conversation_id: id, title, created_at: created } = thread;
    const row = make("li", "thread-row");
    const open = button("thread");
    const current = this.chat.conversation && this.chat.conversation.conversation_id;
    if (current === id) open.setAttribute("aria-current", "true");
    open.append(make("span", "thread-title", isText(title) ? title : ""));
    const when = new Date(created);
    if (isText(created) && !Number.isNaN(when.getTime())) {
      const format = { dateStyle: "medium", timeStyle: "short" };
      const time = make("time", "thread-time", when.toLocaleString(this.chat.catalog.lang, format));
      time.dateTime = created;
      open.append(time);
    }
    open.addEventListener("click", () => this.chat.switchTo({ conversation_id: id }));
    const text = (key) => this.chat.text(key) || "";
    const rename = button("thread-rename", text("ui.rename"), PENCIL);
    const remove = button("thread-delete", text("ui.delete"), BIN);
    rename.addEventListener("click", () => this.renaming(row, id, isText(title) ? title : ""));
    remove.addEventListener("click", () => this.confirming(row, id));
    row.append(open, rename, remove);
    return row;
  }

  /** The row as a small form: the title to edit, Save and Cancel (Escape cancels). */
  renaming(row, id, title) {
    const text = (key) => this.chat.text(key) || "";
    const form = make("form", "thread-form");
    const input = make("input", "thread-input");
    input.value = title;
    input.maxLength = 200;
    input.setAttribute("aria-label", text("ui.conversation_title"));
    const cancel = button("thread-cancel", text("ui.cancel"));
    const save = make("button", "thread-save", text("ui.save"));
    save.type = "submit";
    form.append(input, save, cancel);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!input.value.trim()) return input.focus();
      const renamed = await this.chat.client.renameConversation(id, input.value);
      if (!renamed.ok) return this.chat.trouble.failed(renamed, true);
      await this.show();
    });
    this.keepEscape(form, () => this.show());
    cancel.addEventListener("click", () => this.show());
    row.replaceChildren(form);
    input.focus();
    input.select();
  }

  /** The row asks before it deletes: the question, Delete and Cancel. */
  confirming(row, id) {
    const text = (key) => this.chat.text(key) || "";
    const box = make("div", "thread-confirm");
    const yes = button("thread-delete-yes", text("ui.delete"));
    const cancel = button("thread-cancel", text("ui.cancel"));
    box.append(make("p", "thread-question", text("ui.delete_confirm")), yes, cancel);
    yes.addEventListener("click", () => this.remove(id, yes));
    cancel.addEventListener("click", () => this.show());
    this.keepEscape(box, () => this.show());
    row.replaceChildren(box);
    cancel.focus();
  }

  /** Delete the conversation (a turn of it still running is stopped first); the one shown
   *  goes, and the next question starts a new one. */
  async remove(id, yes) {
    yes.disabled = true;
    const deleted = await this.chat.client.deleteConversation(id, { stop: true });
    if (!deleted.ok && deleted.kind !== "gone") {
      yes.disabled = false;
      return this.chat.trouble.failed(deleted, true);
    }
    const current = this.chat.conversation && this.chat.conversation.conversation_id;
    if (current === id) this.chat.switchTo(null, { keepList: true });
    await this.show();
  }

  /** Escape inside a row's form goes back to the list, not out of it. */
  keepEscape(part, back) {
    part.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      event.preventDefault();
      event.stopPropagation();
      back();
    });
  }
}
