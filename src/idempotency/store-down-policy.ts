import { isStoreTimeout, isStoreUnavailable, isWriteConflict } from '../database/mongo-errors.js';
import type { IdempotentWork } from './idempotent-work.js';

/**
 * What a keyed route does when MongoDB, the store of its records, cannot be
 * reached (@Idempotent({ onStoreDown })): 'closed' refuses with 503 +
 * Retry-After and runs nothing; 'open' runs the work without the guard.
 */
export type StoreDownPolicy = 'closed' | 'open';

/**
 * Whether this failure lets an 'open' route run unguarded: only an
 * unreachable or unanswering store, never a store that answered (a write
 * conflict on a hot key is contention, not an outage: running unguarded
 * then would skip the guard exactly when it is needed), and only when the
 * work says how to run without it.
 */
export function runsWithoutGuard(policy: StoreDownPolicy | undefined, work: IdempotentWork, error: unknown): boolean {
  return policy === 'open' && typeof work.withoutGuard === 'function' && isStoreUnreachable(error);
}

/** The store did not answer at all (down, unreachable, frozen) - not a store that answered with an error. */
export function isStoreUnreachable(error: unknown): boolean {
  return isStoreTimeout(error) || (isStoreUnavailable(error) && !isWriteConflict(error) && isNetworkFailure(error));
}

function isNetworkFailure(error: unknown): boolean {
  const name = (error as Error)?.name ?? '';
  return /Network|NotConnected|TopologyClosed|ServerClosed|PoolCleared|PoolClosed/.test(name);
}
