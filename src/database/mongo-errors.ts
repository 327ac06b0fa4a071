/*
 * Duck-typed on purpose: errors can come from the driver copy mongoose
 * bundles, so `instanceof MongoServerError` is not reliable.
 */
interface MongoLikeError {
  code?: unknown;
  codeName?: unknown;
  hasErrorLabel?: (label: string) => boolean;
}

export function isDuplicateKey(error: unknown): boolean {
  return (error as MongoLikeError)?.code === 11000;
}

export function isWriteConflict(error: unknown): boolean {
  return (error as MongoLikeError)?.code === 112;
}

export function hasLabel(error: unknown, label: string): boolean {
  const candidate = error as MongoLikeError;
  return typeof candidate?.hasErrorLabel === 'function' && candidate.hasErrorLabel(label);
}

const UNAVAILABLE_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
]);
const UNAVAILABLE_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'UnknownTransactionCommitResult', 'ResetPool'];
const NETWORK_FAILURE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH/;

/**
 * The store cannot be reached or cannot commit right now - unreachable, or a
 * write conflict that outlived the transaction retries - also when the
 * driver wraps that in a bulk-write or transaction error: the request is
 * refused with 503 + Retry-After, never processed without the store.
 */
export function isStoreUnavailable(error: unknown): boolean {
  let current = error as (Error & { cause?: unknown }) | undefined;
  for (let depth = 0; current && depth < 5; depth++, current = current.cause as typeof current) {
    const name = current.name ?? '';
    if (UNAVAILABLE_NAMES.has(name) || name.endsWith('ServerSelectionError') || isWriteConflict(current)) return true;
    if (name.startsWith('Mongo') && (UNAVAILABLE_LABELS.some((label) => hasLabel(current, label)) || NETWORK_FAILURE.test(current.message ?? ''))) {
      return true;
    }
  }
  return false;
}
