// Why a request did not end in a 2xx, with everything the caller needs to
// decide what comes next.
import type { Problem } from './problem.js';

/**
 * - `stopped`: the server answered something a retry cannot change (a 4xx, or
 *   guidance `retryable: false`); see `newKeySafe` and `location`.
 * - `gave-up`: every answer so far was retryable but the attempts or the
 *   deadline ran out. The operation may have run: keep the key, resume later
 *   with the same operation id.
 * - `aborted`: the caller's signal aborted. The same holds: keep the key.
 */
export type IdempotentRequestErrorKind = 'stopped' | 'gave-up' | 'aborted';

/** What {@link IdempotentRequestError} carries. */
export interface IdempotentRequestErrorDetails {
  kind: IdempotentRequestErrorKind;
  operationId: string;
  key: string;
  attempts: number;
  /** Status of the last answer; undefined when the last attempt got none. */
  status?: number;
  problem?: Problem;
  /** True only when the server says (or the contract implies) that nothing was executed for this request. */
  newKeySafe: boolean;
  location?: string;
  reason: string;
  /** The last network error or abort reason, when the last attempt got no answer. */
  cause?: unknown;
}

/** The typed error of `IdempotentClient.request`: the last problem, its `code`, `newKeySafe` and `Location`. */
export class IdempotentRequestError extends Error {
  override readonly name = 'IdempotentRequestError';
  readonly kind: IdempotentRequestErrorKind;
  readonly operationId: string;
  /** The Idempotency-Key every attempt carried; still in the store. */
  readonly key: string;
  readonly attempts: number;
  readonly status: number | undefined;
  /** The last problem+json body, when there was one. */
  readonly problem: Problem | undefined;
  /** The problem's `code` (`idempotency_key_expired`, `card_declined`, ...). */
  readonly code: string | undefined;
  readonly newKeySafe: boolean;
  /** For 409 `idempotency_key_expired`: the resource the operation already created. */
  readonly location: string | undefined;

  constructor(details: IdempotentRequestErrorDetails) {
    super(
      `${details.kind === 'stopped' ? 'stopped' : details.kind === 'gave-up' ? 'gave up' : 'aborted'} after ${details.attempts} attempt(s) ` +
        `of operation ${JSON.stringify(details.operationId)}: ${details.reason}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.kind = details.kind;
    this.operationId = details.operationId;
    this.key = details.key;
    this.attempts = details.attempts;
    this.status = details.status;
    this.problem = details.problem;
    this.code = details.problem?.code;
    this.newKeySafe = details.newKeySafe;
    this.location = details.location;
  }

  /** 409 `idempotency_key_expired`: the operation was done before; do not repeat it (see `location`). */
  get alreadyDone(): boolean {
    return this.status === 409 && this.code === 'idempotency_key_expired';
  }
}
