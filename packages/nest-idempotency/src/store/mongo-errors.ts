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
  'MongoServerClosedError',
  'MongoPoolClearedError',
  'MongoPoolClosedError',
  'MongoWaitQueueTimeoutError',
  'MongoOperationTimeoutError',
]);
/** No reply in time: asking again within the same request would wait as long again. */
const TIMEOUT_NAMES = new Set(['MongoNetworkTimeoutError', 'MongoWaitQueueTimeoutError', 'MongoOperationTimeoutError']);
const UNAVAILABLE_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'UnknownTransactionCommitResult', 'ResetPool'];
/*
 * Server codes meaning "not now" rather than "not this request": no primary,
 * shutting down or stepping down, a timed-out or interrupted operation, a
 * transaction the server no longer knows. (Codes by name in the MongoDB
 * server's error_codes.yml.)
 */
const UNAVAILABLE_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  50, // MaxTimeMSExpired
  89, // NetworkTimeout
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  251, // NoSuchTransaction
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);
const NETWORK_FAILURE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH/;
/**
 * Mongoose's own wait for a connection (an app that keeps `bufferCommands` on, the
 * default): the store was not connected for `bufferTimeoutMS`. Unreachable, and a timeout.
 */
const isBufferingTimeout = (error: Error): boolean => error.name === 'MongooseError' && /buffering timed out/.test(error.message ?? '');
/*
 * The session's transaction state and the server's disagree - after a
 * timed-out attempt whose abort never arrived (the jongodb emulator says it
 * with code 14; the driver has its own MongoTransactionError). Nothing was
 * written by this request; a retry starts clean.
 */
const CONFUSED_SESSION = /transaction already in progress/i;

/** Walks an error and the causes it wraps (bulk-write, transaction and Nest wrappers). */
function someInChain(error: unknown, test: (candidate: Error & { code?: unknown }) => boolean): boolean {
  let current = error as (Error & { cause?: unknown; code?: unknown }) | undefined;
  for (let depth = 0; current && depth < 5; depth++, current = current.cause as typeof current) {
    if (test(current)) return true;
  }
  return false;
}

/**
 * The store cannot be reached, cannot answer in time, or cannot commit right
 * now - unreachable, frozen, stepping down, a write conflict that outlived
 * the transaction retries, a session it is confused about - also when the
 * driver wraps that in a bulk-write or transaction error: the request is
 * refused with 503 + Retry-After, never processed without the store.
 */
export function isStoreUnavailable(error: unknown): boolean {
  return someInChain(error, (current) => {
    const name = current.name ?? '';
    if (UNAVAILABLE_NAMES.has(name) || name.endsWith('ServerSelectionError') || isWriteConflict(current) || isBufferingTimeout(current))
      return true;
    if (!name.startsWith('Mongo')) return false;
    return (
      UNAVAILABLE_LABELS.some((label) => hasLabel(current, label)) ||
      (typeof current.code === 'number' && UNAVAILABLE_CODES.has(current.code)) ||
      NETWORK_FAILURE.test(current.message ?? '') ||
      CONFUSED_SESSION.test(current.message ?? '')
    );
  });
}

/**
 * The store did not answer within its bound (socket, pool wait or server
 * selection timeout): a frozen or overloaded store. Retrying inside the same
 * request would only make the client wait that long again.
 */
export function isStoreTimeout(error: unknown): boolean {
  return someInChain(
    error,
    (current) =>
      TIMEOUT_NAMES.has(current.name ?? '') || (current.name ?? '').endsWith('ServerSelectionError') || isBufferingTimeout(current),
  );
}

/**
 * What a keyed route does when MongoDB, the store of its records, cannot be
 * reached (@Idempotent({ onStoreDown })): 'closed' refuses with 503 +
 * Retry-After and runs nothing; 'open' runs the work without the guard.
 */
export type StoreDownPolicy = 'closed' | 'open';

/** The store did not answer at all (down, unreachable, frozen) - not a store that answered with an error. */
export function isStoreUnreachable(error: unknown): boolean {
  return isStoreTimeout(error) || (isStoreUnavailable(error) && !isWriteConflict(error) && isNetworkFailure(error));
}

function isNetworkFailure(error: unknown): boolean {
  const name = (error as Error)?.name ?? '';
  return /Network|NotConnected|TopologyClosed|ServerClosed|PoolCleared|PoolClosed/.test(name);
}
