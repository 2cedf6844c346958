/**
 * A long transcript is read a page at a time: the newest `page-size` messages first, then,
 * on request, the page before the oldest shown. Pure: the numbers and the addresses.
 */

export const PAGE_SIZE = 100; // transcript messages read at once (`page-size`); older on request
export const MOST = 1000; // the most the server sends in one page

/** Messages per request: the `page-size` attribute when it is a positive number (at most
 *  MOST), else PAGE_SIZE. */
export function pageSize(attribute) {
  const given = Number.parseInt(attribute || "", 10);
  return given > 0 ? Math.min(given, MOST) : PAGE_SIZE;
}

/** The address of a page of the conversation's transcript: the newest `limit` messages,
 *  or with `before`, the `limit` messages before that one. */
export function transcriptPath(conversationId, { before = null, limit }) {
  const id = encodeURIComponent(conversationId);
  const query = before === null ? `limit=${limit}` : `before=${before}&limit=${limit}`;
  return `/api/conversations/${id}?${query}`;
}

/** The cursor of the page before `transcript` (its `before`), or null when it is the first
 *  page: there is nothing earlier to offer. */
export function earlierCursor(transcript) {
  const before = transcript ? transcript.before : null;
  return Number.isInteger(before) && before > 0 ? before : null;
}
