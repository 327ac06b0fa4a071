// @idempotent-orders/idempotent-client: a reference client for idempotent
// HTTP APIs. TypeScript, fetch, no framework, no runtime dependency.

/** The client and its request/result/options types. */
export {
  IdempotentClient,
  describeAttempt,
  type AttemptEvent,
  type IdempotentClientOptions,
  type IdempotentRequest,
  type IdempotentResult,
} from './client.js';
/** The typed error of a request that did not end in a 2xx. */
export { IdempotentRequestError, type IdempotentRequestErrorDetails, type IdempotentRequestErrorKind } from './errors.js';
/** The decision on one attempt: done, retry with the same key, or stop. */
export {
  decide,
  KEY_EXPIRED,
  KEY_IN_USE,
  KEY_REUSED,
  RETRYABLE_STATUSES,
  type AttemptOutcome,
  type Decision,
  type DecisionSource,
} from './decision.js';
/** The problem+json body and its guidance fields (`retryable`, `reuseKey`, `newKeySafe`). */
export { readProblem, type Problem } from './problem.js';
/** Retry-After, as delay-seconds or an HTTP-date. */
export { parseRetryAfter } from './retry-after.js';
/** Backoff with full jitter, capped, bounded by attempts and a deadline, Retry-After as a floor. */
export { backoffDelayMs, planRetry, retryPolicy, type RetryPlan, type RetryPolicy, type RetryPolicyOptions } from './retry-policy.js';
/** Keys: random, derived from the caller's ids, and their syntax. */
export { deriveIdempotencyKey, isValidIdempotencyKey, randomIdempotencyKey } from './idempotency-key.js';
/** The store port: operation id -> key, first writer wins. */
export type { KeyStore } from './key-store.js';
/** The in-memory store (the default). */
export { MemoryKeyStore } from './memory-key-store.js';
/** The durable store: one atomically written file per operation. */
export { FileKeyStore } from './file-key-store.js';
