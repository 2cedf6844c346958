/**
 * A tool's card and an approval card, built as text (never HTML): what a card may hold is
 * decided by pure functions (`cardParts`, `summary`, `approvalWhat`), then drawn.
 */

export const SUMMARY_MAX = 300; // characters of a tool input an approval card shows

export const listed = (value) => (Array.isArray(value) ? value : []);
export const isText = (value) => typeof value === "string";

/** An element with a class and, if given, its text (as text, never HTML). */
export function make(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A small icon (an SVG path in a 24-unit box), hidden from screen readers: the button
 *  that holds it is labelled. `turned`: drawn upside down. */
export function icon(path, turned = false) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  if (turned) svg.setAttribute("transform", "rotate(180)");
  const drawn = document.createElementNS("http://www.w3.org/2000/svg", "path");
  drawn.setAttribute("d", path);
  svg.append(drawn);
  return svg;
}

/** A tool's input as a few lines of text, `name: value`, cut short when long. */
export function summary(input) {
  const shown = (value) => (isText(value) ? value : String(JSON.stringify(value)));
  const lines =
    input && typeof input === "object" && !Array.isArray(input)
      ? Object.entries(input).map(([name, value]) => `${name}: ${shown(value)}`)
      : [shown(input)];
  const text = lines.join("\n");
  return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1)}…` : text;
}

export function isHttps(url) {
  try {
    return isText(url) && new URL(url).protocol === "https:";
  } catch (error) {
    return false;
  }
}

/**
 * What of a card (turnkeeper.Card's JSON) is shown: its title, the label and value pairs
 * that are text, the columns that are text and the rows that are lists (a cell that is not
 * text is empty), the links to https: addresses. Null for anything that is not a card.
 */
export function cardParts(card) {
  if (!card || !isText(card.title)) return null;
  return {
    title: card.title,
    fields: listed(card.fields).filter((f) => f && isText(f.label) && isText(f.value)),
    columns: listed(card.columns).filter(isText),
    rows: listed(card.rows)
      .filter(Array.isArray)
      .map((row) => row.map((cell) => (isText(cell) ? cell : ""))),
    links: listed(card.links).filter((l) => l && isText(l.text) && isHttps(l.url)),
  };
}

/** A tool's card: its title, its pairs as a description list, its table, its links. */
export function cardElement(card) {
  const parts = cardParts(card);
  if (!parts) return null;
  const body = make("div", "card-body");
  body.append(make("h3", "card-title", parts.title));
  if (parts.fields.length) {
    const list = make("dl", "card-fields");
    for (const field of parts.fields) {
      const pair = make("div");
      pair.append(make("dt", "", field.label), make("dd", "", field.value));
      list.append(pair);
    }
    body.append(list);
  }
  const table = cardTable(parts.columns, parts.rows);
  if (table) body.append(table);
  if (parts.links.length) {
    const list = make("ul", "card-links");
    for (const link of parts.links) {
      const anchor = make("a", "", link.text);
      anchor.href = link.url;
      anchor.target = "_blank";
      anchor.rel = "noopener noreferrer";
      const item = make("li");
      item.append(anchor);
      list.append(item);
    }
    body.append(list);
  }
  return body;
}

/** The card's table, headings first, in a box that scrolls sideways on a narrow screen. */
function cardTable(columns, rows) {
  if (!columns.length && !rows.length) return null;
  const table = make("table");
  if (columns.length) {
    const head = make("tr");
    for (const column of columns) {
      const heading = make("th", "", column);
      heading.scope = "col";
      head.append(heading);
    }
    table.append(make("thead"));
    table.tHead.append(head);
  }
  const body = make("tbody");
  for (const row of rows) {
    const line = make("tr");
    for (const cell of row) line.append(make("td", "", cell));
    body.append(line);
  }
  table.append(body);
  const box = make("div", "card-table");
  box.append(table);
  return box;
}

/** The approvals a turn waits for that can be shown: each names its use and its tool. */
export function waitingApprovals(approvals) {
  return listed(approvals).filter((a) => a && isText(a.tool_use_id) && isText(a.tool));
}

/** What the assistant wants to do: the tool's ask text in the reader's words, under
 *  `ui.approval_title` ("The assistant wants to do this:"); a tool with none is asked
 *  about by name alone (`ui.approval_unknown`, "Run {tool}?"), never by its past-tense
 *  caption. `text`: a catalog's lookup (locale.js). */
export function approvalWhat(approval, text) {
  const ask = isText(approval.ask) ? text(approval.ask) : null;
  if (ask) return { title: text("ui.approval_title") || "", what: ask };
  const unknown = text("ui.approval_unknown") || "{tool}";
  return { title: "", what: unknown.replace("{tool}", approval.tool) };
}

/** A decision as the transcript keeps it: "You approved: Delete a note" (the tool's name
 *  when it has no ask text); null for one that names no tool. */
export function decisionText(decision, text) {
  if (!decision || !isText(decision.tool)) return null;
  const action = (isText(decision.ask) && text(decision.ask)) || decision.tool;
  const key = decision.approved === true ? "ui.you_approved" : "ui.you_denied";
  return (text(key) || "{action}").replace("{action}", action);
}

/** An approval card: what the assistant wants to do, the input by its fields' names, and
 *  Approve and Deny (Deny the quieter of the two), each calling `decide(card, approved)`.
 *  Text only: nothing of the input is read as HTML. */
export function approvalCard(approval, { text, name, decide }) {
  const item = make("li", "bubble bot approval");
  item.dataset.use = approval.tool_use_id;
  const { title, what } = approvalWhat(approval, text);
  const approve = make("button", "approve", text("ui.approve") || "");
  const deny = make("button", "deny", text("ui.deny") || "");
  approve.type = deny.type = "button";
  approve.addEventListener("click", () => decide(item, true));
  deny.addEventListener("click", () => decide(item, false));
  const actions = make("div", "approval-actions");
  actions.append(approve, deny);
  item.setAttribute("role", "group");
  item.setAttribute("aria-label", title ? `${title} ${what}` : what);
  item.append(make("span", "who", name));
  if (title) item.append(make("p", "approval-title", title));
  item.append(make("p", "approval-what", what));
  item.append(make("pre", "approval-input", summary(approval.input)), actions);
  return item;
}
