/**
 * Markdown as it grows: an answer streamed so far ends wherever the last piece did, often
 * inside a construct (`**bol`, an open code fence, `[a link](htt`). Rendered as it is, such
 * a tail shows its raw syntax until the rest arrives. `growing(text)` is the text to render
 * instead: an open fence closed, an open code span, emphasis or strikethrough closed at the
 * end, a marker with nothing after it yet, a fence being typed or a link not yet whole left
 * out. Pure; a text with nothing open is returned as it is.
 */

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** The text with its open code fence closed, or null if no fence is open at its end. */
function closedFence(text) {
  let open = null;
  for (const line of text.split("\n")) {
    const found = FENCE.exec(line);
    if (!open) {
      if (found) open = found[1];
    } else if (found && found[1][0] === open[0] && found[1].length >= open.length) {
      if (!line.slice(found[0].length).trim()) open = null;
    }
  }
  if (!open) return null;
  // The last line may be the closing fence on its way ("``"): the closing is ours.
  const partial = new RegExp(`\\n {0,3}\\${open[0]}{1,${open.length - 1}}$`);
  return `${text.replace(partial, "")}\n${open}`;
}

/** Where the last paragraph starts: after the last blank line. */
function lastParagraph(text) {
  const blank = /\n[ \t]*\n/g;
  let start = 0;
  for (let found = blank.exec(text); found; found = blank.exec(text)) start = blank.lastIndex;
  return start;
}

/** `para` with its code spans' insides masked (so no marker in them counts), and the run of
 *  backticks that opens a span not closed yet ({at, run}), if any. */
function codeSpans(para) {
  let masked = "";
  let i = 0;
  while (i < para.length) {
    if (para[i] !== "`") {
      masked += para[i];
      i += 1;
      continue;
    }
    const run = /^`+/.exec(para.slice(i))[0];
    const after = i + run.length;
    const close = new RegExp(`(^|[^\`])${run}(?!\`)`).exec(para.slice(after));
    if (!close) return { masked, open: { at: i, run } };
    const end = after + close.index + close[1].length + run.length;
    masked += run + "x".repeat(end - i - 2 * run.length) + run;
    i = end;
  }
  return { masked, open: null };
}

const SPACE = /\s/;
const WORD = /[\p{L}\p{N}]/u;

/** The emphasis and strikethrough `masked` opens and does not close, innermost last; where
 *  a marker with nothing after it starts (`dangling`, or -1); and a closing marker at the end
 *  shorter than its opener (`**bold*`: `short`, {at, run} the opener's, or null). */
function openEmphasis(masked) {
  const stack = [];
  let dangling = -1;
  let short = null;
  const runs = /\\.|(\*+|_+|~~)/g;
  for (let found = runs.exec(masked); found; found = runs.exec(masked)) {
    if (!found[1]) continue; // an escaped character
    const run = found[1];
    const before = masked[found.index - 1];
    const after = masked[found.index + run.length];
    const canClose = before !== undefined && !SPACE.test(before);
    const canOpen = after !== undefined && !SPACE.test(after);
    if (run[0] === "_" && before && after && WORD.test(before) && WORD.test(after)) continue;
    const opener = stack.findLastIndex((open) => open.run[0] === run[0]);
    const last = !masked.slice(found.index + run.length).trim();
    if (canClose && opener >= 0) {
      const [open] = stack.splice(opener, 1);
      if (last && run.length < open.run.length) short = { at: found.index, run: open.run };
    } else if (canOpen) stack.push({ at: found.index, run });
    else if (last) dangling = found.index;
  }
  return { closers: stack.reverse().map((open) => open.run), dangling, short };
}

/** The text to render for `text`, an answer streamed so far (see above). */
export function growing(text) {
  const fenced = closedFence(text);
  if (fenced !== null) return fenced;
  const body = text.replace(/(^|\n) {0,3}(`{1,2}|~{1,2})$/, "$1"); // a fence being typed
  const start = lastParagraph(body);
  let para = body.slice(start);
  let { masked, open } = codeSpans(para);
  let code = "";
  if (open && para.slice(open.at + open.run.length).trim()) {
    code = open.run; // the span shows as code so far
  } else if (open) {
    para = para.slice(0, open.at);
    masked = masked.slice(0, open.at);
  } else {
    const link = /\[[^\]\n]*(\](\([^)\s]*)?)?$/.exec(masked);
    if (link) [para, masked] = [para.slice(0, link.index), masked.slice(0, link.index)];
  }
  const { closers, dangling, short } = openEmphasis(masked);
  if (dangling >= 0 && !code) para = para.slice(0, dangling);
  if (short && !code) para = para.slice(0, short.at) + short.run;
  if (!closers.length) return body.slice(0, start) + para + code;
  const inner = code ? para + code : para.trimEnd();
  return body.slice(0, start) + inner + closers.join("");
}
