// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.

const DELAY_SECONDS = /^\d+$/;
/** asctime-date ("Sun Nov  6 08:49:37 1994"): GMT by definition, local time to Date.parse. */
const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$/;

/**
 * How long `Retry-After` asks the client to wait, in milliseconds from `nowMs`:
 * delay-seconds (`"2"`) or an HTTP-date (`"Tue, 01 Dec 2026 12:00:00 GMT"`,
 * the obsolete forms too, as RFC 9110 asks recipients to accept). A date in
 * the past is 0. Undefined when the header is absent or unreadable: the
 * client then waits its own backoff.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (DELAY_SECONDS.test(trimmed)) return Number(trimmed) * 1000;
  // A bare number with a sign or a fraction is neither form; Date.parse would read "1.5" as a year.
  if (/^[-+]?[\d.]+$/.test(trimmed)) return undefined;
  const date = Date.parse(ASCTIME.test(trimmed) ? `${trimmed} GMT` : trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
