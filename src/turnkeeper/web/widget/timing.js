/**
 * When to ask the server again: the pace of polling a running turn, and of retrying after a
 * failed request. Pure: milliseconds from counts.
 */

export const POLL_MS = 300; // while a turn runs and the tab is visible
export const POLL_MAX_MS = 1500; // after a run of "nothing new" answers
export const HIDDEN_MS = 5000; // while the tab is hidden
export const RETRY_MS = 500; // the first retry after a failed request, doubling...
export const RETRY_MAX_MS = 8000; // ...up to this

export const STREAMING_MS = 5000; // while the turn's event stream is read (it says when)

/** The next poll, after `quiet` answers in a row that had nothing new: 0.3 s, half again
 *  as long each time up to 1.5 s; every 5 s while the tab is `hidden`, or while the turn's
 *  event stream is read (`streaming`: its events ask for the state when it moved). */
export function pollDelay(quiet, hidden, streaming = false) {
  if (streaming) return STREAMING_MS;
  if (hidden) return HIDDEN_MS;
  return Math.min(POLL_MAX_MS, POLL_MS * 1.5 ** quiet);
}

/** The retry after `failures` failed requests in a row: 0.5 s, doubling up to 8 s; never
 *  sooner than the server's `retry-after` (ms, or null), never later than 8 s. */
export function retryDelay(failures, retryAfter = null) {
  const backoff = RETRY_MS * 2 ** Math.max(0, failures - 1);
  return Math.min(RETRY_MAX_MS, Math.max(backoff, retryAfter || 0));
}
