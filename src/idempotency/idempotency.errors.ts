import { DomainError } from '../common/domain-error.js';

export class IdempotencyKeyMissingError extends DomainError {
  readonly code = 'idempotency_key_missing';
  constructor() {
    super('This operation needs an Idempotency-Key header.');
  }
}

export class IdempotencyKeyInvalidError extends DomainError {
  readonly code = 'idempotency_key_invalid';
  constructor() {
    super('Idempotency-Key must be 1-255 printable ASCII characters.');
  }
}

export class IdempotencyKeyReusedError extends DomainError {
  readonly code = 'idempotency_key_reused';
  constructor() {
    super('This Idempotency-Key was already used with a different request body.');
  }
}

export class IdempotencyKeyInUseError extends DomainError {
  readonly code = 'idempotency_key_in_use';
  constructor(retryAfterSeconds: number) {
    super('A request with this Idempotency-Key is still in progress; retry later.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * Thrown by a fenced write (checkpoint, complete, fail) when the caller no
 * longer owns the lease: someone else took the record over. The transaction
 * it ran in aborts, so the stale worker changes nothing.
 */
export class LeaseLostError extends Error {
  constructor(readonly recordId: string) {
    super(`Lease on idempotency record lost (taken over by another worker)`);
    this.name = 'LeaseLostError';
  }
}

/**
 * Thrown by a consumer's resume when its attempt ended failed without a
 * response (abandoned: nothing was charged). The record is final already;
 * the service reads it again and starts the next attempt.
 */
export class AttemptAbandonedError extends Error {
  constructor(readonly recordId: string) {
    super('Attempt abandoned; the record decides what happens next');
    this.name = 'AttemptAbandonedError';
  }
}

/**
 * A business document this attempt would write already exists. Thrown by a
 * consumer's unique backstop (e.g. one order per claim), or when the stored
 * document differs from the one it would write (`detail` names how) - an
 * identical one is adopted, never reported. The idempotency service counts
 * it, notes it on the record (admin API) and stops; it pages.
 */
/**
 * The request's data subject was erased after the request arrived: its claim
 * was rolled back and it is answered 410 response_erased, like a key whose
 * stored response was erased.
 */
export class SubjectErasedError extends Error {
  constructor() {
    super('The data subject of this request was erased after it arrived');
  }
}

export class DuplicateClaimError extends Error {
  constructor(
    readonly what: string,
    readonly detail: string | null = null,
  ) {
    super(
      detail
        ? `A ${what} already exists for this idempotency claim and differs from the one it would write (${detail})`
        : `Unique backstop rejected a second ${what} for one idempotency claim`,
    );
    this.name = 'DuplicateClaimError';
  }
}

export class IdempotencyKeyNotFoundError extends DomainError {
  readonly code = 'idempotency_key_not_found';
  constructor() {
    super('No record for this Idempotency-Key in your account.');
  }
}

export class IdempotencyOperationRequiredError extends DomainError {
  readonly code = 'idempotency_operation_required';
  constructor() {
    super('This key is pending for several operations; name one with ?operation=.');
  }
}

export class IdempotencyLeaseActiveError extends DomainError {
  readonly code = 'idempotency_lease_active';
  constructor(retryAfterSeconds: number, detail = 'The record is held by a live request; only an expired lease can be released.') {
    super(detail);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
