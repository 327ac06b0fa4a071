// What an answer means for the operation: done, send the same request again
// with the same key, or stop. The server's guidance first, then the status.
import { readProblem, type Problem } from './problem.js';
import { parseRetryAfter } from './retry-after.js';

/** What one attempt brought back: an answer, or none (a reset, a refused connection, a timeout). */
export type AttemptOutcome =
  { kind: 'response'; status: number; headers: Headers; body: unknown } | { kind: 'no-response'; error: unknown };

/** Where a decision came from: the problem's guidance fields, or the status code (fields absent). */
export type DecisionSource = 'guidance' | 'status';

/** The decision on one attempt's outcome. */
export type Decision =
  | { action: 'done'; replayed: boolean }
  | { action: 'retry-same-key'; source: DecisionSource; reason: string; retryAfterMs?: number; problem?: Problem }
  | {
      action: 'stop';
      source: DecisionSource;
      reason: string;
      /** Nothing was executed: a new key (and a corrected request) cannot duplicate an effect. */
      newKeySafe: boolean;
      problem?: Problem;
      /** `Location` of the answer: for 409 `idempotency_key_expired`, what was already done. */
      location?: string;
    };

/** Statuses that are retried with the same key when the problem carries no guidance. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 500, 502, 503, 504]);

/** 409 codes: still running (retry), done before and forgotten (stop, do not repeat). */
export const KEY_IN_USE = 'idempotency_key_in_use';
export const KEY_EXPIRED = 'idempotency_key_expired';
/** 422: the key was used for another request; nothing ran for this one. */
export const KEY_REUSED = 'idempotency_key_reused';

/**
 * The decision table (README of this package):
 *
 * - no answer at all: retry, same key (the request may have run: only the same key finds out);
 * - 2xx: done (`replayed` from `Idempotent-Replayed: true`);
 * - a problem with `retryable`: that field decides; `newKeySafe` when present says whether a new key is safe;
 * - otherwise by status: 408, 409 `idempotency_key_in_use`, 425, 429, 500, 502, 503, 504 retry with the same
 *   key; everything else stops - 409 `idempotency_key_expired` with its `Location` ("done before, do not
 *   repeat"), 400 and 422 `idempotency_key_reused` as new-key-safe, any other as not.
 *
 * A retry waits at least `Retry-After` (seconds, or an HTTP-date read against the answer's `Date`, else `nowMs`).
 */
export function decide(outcome: AttemptOutcome, nowMs: number): Decision {
  if (outcome.kind === 'no-response') {
    return { action: 'retry-same-key', source: 'status', reason: `no answer (${describeError(outcome.error)})` };
  }
  const { status, headers } = outcome;
  if (status >= 200 && status < 300) {
    return { action: 'done', replayed: headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true' };
  }
  const problem = readProblem(outcome.body);
  const code = problem?.code;
  const label = code === undefined ? `${status}` : `${status} ${code}`;
  const location = headers.get('location') ?? (typeof problem?.location === 'string' ? problem.location : undefined);

  if (problem?.retryable !== undefined) {
    if (problem.retryable) {
      return {
        action: 'retry-same-key',
        source: 'guidance',
        reason: `${label}: retryable`,
        retryAfterMs: retryAfter(headers, nowMs),
        problem,
      };
    }
    return stop('guidance', `${label}: not retryable`, problem.newKeySafe ?? newKeySafeByStatus(status, code), problem, location);
  }

  if (RETRYABLE_STATUSES.has(status) || (status === 409 && code === KEY_IN_USE)) {
    return { action: 'retry-same-key', source: 'status', reason: label, retryAfterMs: retryAfter(headers, nowMs), problem };
  }
  const reason = status === 409 && code === KEY_EXPIRED ? `${label}: done before, do not repeat` : label;
  return stop('status', reason, problem?.newKeySafe ?? newKeySafeByStatus(status, code), problem, location);
}

/** Without the field: only what the contract says ran nothing - a refused request (400), a key bound to another body (422). */
function newKeySafeByStatus(status: number, code: string | undefined): boolean {
  return status === 400 || (status === 422 && code === KEY_REUSED);
}

function stop(
  source: DecisionSource,
  reason: string,
  newKeySafe: boolean,
  problem: Problem | undefined,
  location: string | undefined,
): Decision {
  return {
    action: 'stop',
    source,
    reason,
    newKeySafe,
    ...(problem === undefined ? {} : { problem }),
    ...(location === undefined ? {} : { location }),
  };
}

/** An HTTP-date is read against the answer's own `Date` when it has one: the server's clock, no skew with ours. */
function retryAfter(headers: Headers, nowMs: number): number | undefined {
  const serverNow = Date.parse(headers.get('date') ?? '');
  return parseRetryAfter(headers.get('retry-after'), Number.isNaN(serverNow) ? nowMs : serverNow);
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return `${error.message}: ${cause.code}`;
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `${error.name}: ${error.message}`;
  return error.message;
}
