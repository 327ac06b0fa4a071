/**
 * The package's ports: what it needs from the service it runs in, each with
 * a default. Tokens are the package's own abstract classes (never a token
 * the app also provides), mapped to the app's providers only through the
 * module's `ports` extras, so a default can never shadow the app's choice.
 */

/**
 * Where leases, retention and tombstones read the time. Default: this host's
 * clock. Pass the store's clock (the primary's time) when instances run on
 * hosts whose clocks drift: every lease expiry is compared across them.
 */
export abstract class IdempotencyClock {
  abstract now(): Date;
}

/** The host's clock. */
export class SystemClock extends IdempotencyClock {
  now(): Date {
    return new Date();
  }
}

/** Outcomes counted per request (`idempotency_requests_total{outcome}`). */
export type IdempotencyOutcome =
  | 'claimed'
  | 'replayed'
  | 'resumed'
  | 'restarted'
  | 'expired'
  | 'payload_mismatch'
  | 'in_flight_conflict'
  | 'subject_erased'
  | 'unguarded_store_down'
  /** Refused: the key was canceled (409 idempotency_key_canceled). */
  | 'key_canceled'
  | (string & {});

/** States of the fast path's circuit breaker. */
export type CacheCircuitState = 'closed' | 'half_open' | 'open';

/**
 * What the package reports. The default counts nothing; the Prometheus
 * adapter (`@idempotent-orders/nest-idempotency/prometheus`) registers the
 * metrics the alert rules of this repository name.
 */
export abstract class IdempotencyMetrics {
  /** One request's outcome. */
  abstract outcome(operation: string, outcome: IdempotencyOutcome): void;
  /** Times a call to the store (`lookup`, `claim`, `checkpoint`, `complete`, ...). */
  abstract timeStore<T>(call: string, run: () => Promise<T>): Promise<T>;
  /** Seconds a duplicate waited on a key in flight. */
  abstract leaseWait(operation: string, seconds: number): void;
  /** A finished key past retention was claimed afresh. */
  abstract keyExpired(operation: string): void;
  /** A late retry of an answered request met its tombstone (409 idempotency_key_expired). */
  abstract lateRetry(operation: string): void;
  /** A consumer's unique backstop refused a second business document for one claim: pages. */
  abstract duplicateCreation(operation: string): void;
  /** A stored document differs from the one an attempt would write (`what`: the document kind). */
  abstract stateConflict(operation: string, what: string): void;
  /** One reaper pass. */
  abstract reaperRun(): void;
  /** What the reaper did with one stale record. */
  abstract reaperRecord(decision: string): void;
  /** Age in seconds of the oldest pending record (0 when none). */
  abstract oldestPendingAge(seconds: number): void;
  /** One fast-path call and its result (`hit`, `miss`, `ok`, `error`, `timeout`, `open`). */
  abstract cacheCall(call: string, result: string): void;
  /** The fast path's breaker changed state. */
  abstract cacheCircuit(state: CacheCircuitState): void;
  /** A transaction was retried after a transient error (`label`: the caller's name for it). */
  abstract transactionRetry(label: string): void;
}

/** Counts nothing. */
export class NoopIdempotencyMetrics extends IdempotencyMetrics {
  outcome(): void {}
  timeStore<T>(_call: string, run: () => Promise<T>): Promise<T> {
    return run();
  }
  leaseWait(): void {}
  keyExpired(): void {}
  lateRetry(): void {}
  duplicateCreation(): void {}
  stateConflict(): void {}
  reaperRun(): void {}
  reaperRecord(): void {}
  oldestPendingAge(): void {}
  cacheCall(): void {}
  cacheCircuit(): void {}
  transactionRetry(): void {}
}
