/**
 * Base of every error the package answers a client with: a stable
 * snake_case `code` (problem+json's `code`), the HTTP `status` it maps to,
 * and `retryAfterSeconds` when a retry of the same request can succeed.
 * Map it in your exception filter with one `instanceof` branch.
 */
export abstract class IdempotencyError extends Error {
  abstract readonly code: string;
  abstract readonly status: number;
  /** Seconds a client should wait before retrying the same request, when that can succeed. */
  retryAfterSeconds?: number;
  /** Problem+json members beside the standard ones (e.g. `location`), when the refusal has more to say. */
  extensions?: Record<string, unknown>;
  /** Response headers beside Retry-After (e.g. `location`), lower-case names. */
  headers?: Record<string, string>;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class IdempotencyKeyMissingError extends IdempotencyError {
  readonly code = 'idempotency_key_missing';
  readonly status = 400;
  constructor() {
    super('This operation needs an Idempotency-Key header.');
  }
}

export class IdempotencyKeyInvalidError extends IdempotencyError {
  readonly code = 'idempotency_key_invalid';
  readonly status = 400;
  constructor(detail = 'Idempotency-Key must be 1-255 printable ASCII characters.') {
    super(detail);
  }
}

export class IdempotencyKeyReusedError extends IdempotencyError {
  readonly code = 'idempotency_key_reused';
  readonly status = 422;
  constructor() {
    super('This Idempotency-Key was already used with a different request body.');
  }
}

export class IdempotencyKeyInUseError extends IdempotencyError {
  readonly code = 'idempotency_key_in_use';
  readonly status = 409;
  constructor(retryAfterSeconds: number) {
    super('A request with this Idempotency-Key is still in progress; retry later.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * The duplicate guard (opt-in per route and per tenant): this tenant sent
 * the same body to the same operation under another key within the
 * guard's window. `location` is the earlier request's result once it has
 * one (header `Location` and problem member `location`); while the earlier
 * request is still in flight there is none yet and `retryAfterSeconds` says
 * when to ask again. Send `Idempotency-Intent: new` to mean a second one.
 */
export class PossibleDuplicateError extends IdempotencyError {
  readonly code = 'possible_duplicate';
  readonly status = 409;
  constructor(
    readonly location: string | null,
    retryAfterSeconds?: number,
  ) {
    super(
      location
        ? 'This request was already made under another Idempotency-Key; its result is at Location. Send Idempotency-Intent: new if you mean a second one.'
        : retryAfterSeconds
          ? 'This request is being processed under another Idempotency-Key; retry after Retry-After to find its result, or send Idempotency-Intent: new if you mean a second one.'
          : 'This request was already made under another Idempotency-Key. Send Idempotency-Intent: new if you mean a second one.',
    );
    this.retryAfterSeconds = retryAfterSeconds;
    if (location) {
      this.extensions = { location };
      this.headers = { location };
    }
  }
}

/**
 * The key was canceled (IdempotencyCancellation): what it did was undone, or
 * it never ran, and no request under it runs again, whatever the body.
 * `location` names what the key created (the undone resource), when it did:
 * header `Location` and problem member `location`.
 */
export class IdempotencyKeyCanceledError extends IdempotencyError {
  readonly code = 'idempotency_key_canceled';
  readonly status = 409;
  constructor(readonly location: string | null = null) {
    super('This Idempotency-Key was canceled; no request under it runs again. Use a new key for a new request.');
    if (typeof location === 'string') {
      this.extensions = { location };
      this.headers = { location };
    }
  }
}

export class IdempotencyIntentInvalidError extends IdempotencyError {
  readonly code = 'idempotency_intent_invalid';
  readonly status = 400;
  constructor() {
    super('Idempotency-Intent must be `new` (sent once) when present.');
  }
}

/**
 * Throw it from a simple-mode handler (`@Idempotent()` with
 * `@IdempotencySession()`) when the same request can succeed later (a
 * dependency down, a lock held): the handler's writes roll back, the client
 * gets 503 `retry_later` + `Retry-After`, and the key stays resumable - the
 * retry under the same key runs the handler again. The module option
 * `retryable(error)` maps errors you do not throw yourself.
 */
export class RetryLaterError extends IdempotencyError {
  readonly code = 'retry_later';
  readonly status = 503;
  constructor(
    retryAfterSeconds = 1,
    message = 'Not done yet and nothing was kept; retry with the same Idempotency-Key.',
    options?: { cause?: unknown },
  ) {
    super(message);
    if (!Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 1) throw new RangeError('retryAfterSeconds: an integer >= 1');
    this.retryAfterSeconds = retryAfterSeconds;
    if (options && 'cause' in options) this.cause = options.cause;
  }
}

/**
 * Thrown by a simple-mode work that ended its attempt itself (failed,
 * nothing stored) after the handler threw `reason`: the service passes
 * `reason` on without releasing a lease that no longer exists.
 */
export class AttemptFailedError extends Error {
  constructor(readonly reason: unknown) {
    super('The attempt failed and its record says so; nothing was stored');
    this.name = 'AttemptFailedError';
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
 * The request's data subject was erased after the request arrived: its claim
 * was rolled back and it is answered 410 response_erased, like a key whose
 * stored response was erased.
 */
export class SubjectErasedError extends Error {
  constructor() {
    super('The data subject of this request was erased after it arrived');
    this.name = 'SubjectErasedError';
  }
}

/**
 * A business document this attempt would write already exists. Thrown by a
 * consumer's unique backstop (e.g. one order per claim), or when the stored
 * document differs from the one it would write (`detail` names how) - an
 * identical one is adopted, never reported. The idempotency service counts
 * it, notes it on the record (admin API) and stops; it pages.
 */
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

export class IdempotencyKeyNotFoundError extends IdempotencyError {
  readonly code = 'idempotency_key_not_found';
  readonly status = 404;
  constructor() {
    super('No record for this Idempotency-Key in your account.');
  }
}

export class IdempotencyOperationRequiredError extends IdempotencyError {
  readonly code = 'idempotency_operation_required';
  readonly status = 400;
  constructor() {
    super('This key is pending for several operations; name one with ?operation=.');
  }
}

export class IdempotencyLeaseActiveError extends IdempotencyError {
  readonly code = 'idempotency_lease_active';
  readonly status = 409;
  constructor(retryAfterSeconds: number, detail = 'The record is held by a live request; only an expired lease can be released.') {
    super(detail);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * An erasure committed in MongoDB but Redis could not be told to drop the
 * subject's cached answers. The erasure is safe to repeat: the client retries
 * it (503 + Retry-After) until the cache has been told too.
 */
export class CacheInvalidationFailedError extends IdempotencyError {
  readonly code = 'cache_invalidation_failed';
  readonly status = 503;
  constructor(detail = 'The erasure was recorded, but cached responses could not be invalidated yet; retry the erasure.') {
    super(typeof detail === 'string' ? detail : 'Cached responses could not be invalidated yet; retry.');
    this.retryAfterSeconds = 2;
  }
}

/**
 * Refused BEFORE anything changed: an erasure (or a cancel) must mark the
 * records it is about to change in Redis first, and Redis could not be told
 * (down, its circuit open, or full past what the fast path can make room
 * for). Nothing was recorded; the client retries (503 + Retry-After).
 */
export class CacheUnavailableError extends IdempotencyError {
  readonly code = 'cache_unavailable';
  readonly status = 503;
  constructor(detail = 'Nothing was changed: cached responses could not be marked in Redis; retry the request.') {
    super(detail);
    this.retryAfterSeconds = 2;
  }
}
