import type { StoreDownPolicy } from '../store/mongo-errors.js';

/** Reflector metadata key of a route's IdempotentOptions (read it to treat keyed routes apart, e.g. in a rate limiter). */
export const IDEMPOTENT_ROUTE_METADATA = 'idempotency:options';

/** Set on a handler that takes `@IdempotencyKey()`: it drives the protocol itself (the phases API), not simple mode. */
export const IDEMPOTENCY_PHASES_METADATA = 'idempotency:phases';

/** What `@Idempotent()` declares; read by the interceptor (here, so the decorator and the interceptor do not import each other). */
export interface IdempotentOptions {
  /** Stable operation name, part of the scope key (e.g. `orders.create`): lowercase, digits, `_ . -`. */
  operation: string;
  /** Retention of this route's keys; the module's `ttlSeconds` when absent. */
  ttlSeconds?: number;
  /** Bump when the response body changes shape: new keys are stored under it; keys already used keep their record. */
  schemaVersion?: number;
  /**
   * When MongoDB, the store of record, is unreachable: 'closed' (default)
   * answers 503 + Retry-After and runs nothing - the only choice for anything
   * that moves money; 'open' runs the work's `withoutGuard` instead, for a
   * route whose own writes are naturally idempotent (a PUT of a whole value).
   */
  onStoreDown?: StoreDownPolicy;
  /**
   * Opt in to the duplicate guard (off unless the module's `duplicateGuard`
   * is set, and then only for the tenants it names): the same body under
   * another key within the window is answered 409 `possible_duplicate`,
   * unless the request carries `Idempotency-Intent: new`. For creates whose
   * clients may mint a new key per retry.
   */
  duplicateGuard?: boolean;
}
