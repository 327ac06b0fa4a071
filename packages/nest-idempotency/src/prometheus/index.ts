import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { IdempotencyMetrics, type CacheCircuitState, type IdempotencyOutcome } from '../ports.js';

const STORE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const CIRCUIT_STATE: Record<CacheCircuitState, number> = { closed: 0, half_open: 1, open: 2 };

/**
 * The metrics port on prom-client, registered on your registry, under the
 * names this repository's alert rules and dashboard use
 * (`idempotency_requests_total`, `idempotency_duplicate_creations_total`,
 * `reaper_runs_total`, `mongo_transaction_retries_total`, ...). Needs
 * `prom-client`, an optional peer.
 *
 * ```ts
 * { provide: MY_IDEMPOTENCY_METRICS, useFactory: () => new PrometheusIdempotencyMetrics(registry) }
 * IdempotencyModule.forRootAsync({ ports: { metrics: MY_IDEMPOTENCY_METRICS }, ... })
 * ```
 */
export class PrometheusIdempotencyMetrics extends IdempotencyMetrics {
  constructor(private readonly registry: Registry) {
    super();
  }

  private readonly idempotencyOutcomes = new Counter({
    name: 'idempotency_requests_total',
    help: 'Idempotent requests by operation and outcome (claimed, replayed, in_flight_conflict, payload_mismatch, resumed, restarted, expired, subject_erased)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly duplicateCreations = new Counter({
    name: 'idempotency_duplicate_creations_total',
    help: 'Second business writes for one key stopped by a unique backstop; must stay 0',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  private readonly stateConflicts = new Counter({
    name: 'idempotency_state_conflicts_total',
    help: 'Attempts stopped because a document they would write exists with other content (the record shows it); must stay 0',
    labelNames: ['operation', 'what'] as const,
    registers: [this.registry],
  });

  private readonly storeDuration = new Histogram({
    name: 'idempotency_store_duration_seconds',
    help: 'Latency of idempotency store operations',
    labelNames: ['operation'] as const,
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });

  private readonly leaseWaitSeconds = new Histogram({
    name: 'idempotency_lease_wait_seconds',
    help: 'Time a request waited on another request holding the lease',
    labelNames: ['operation'] as const,
    buckets: [0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });

  private readonly keysExpired = new Counter({
    name: 'idempotency_keys_expired_total',
    help: 'Expired records found on lookup and replaced by a new claim',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  private readonly lateRetries = new Counter({
    name: 'idempotency_late_retries_total',
    help: 'Retries of an already answered key and body after its retention, answered from a tombstone instead of running again',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  private readonly reaperRuns = new Counter({
    name: 'reaper_runs_total',
    help: 'Reaper runs',
    registers: [this.registry],
  });

  private readonly reaperRecords = new Counter({
    name: 'reaper_records_total',
    help: 'Records the reaper handled, by decision (completed, abandoned, lost_lease, error, skipped)',
    labelNames: ['decision'] as const,
    registers: [this.registry],
  });

  private readonly oldestPending = new Gauge({
    name: 'idempotency_oldest_pending_age_seconds',
    help: 'Age of the oldest pending idempotency record (set by the reaper)',
    registers: [this.registry],
  });

  private readonly transactionRetries = new Counter({
    name: 'mongo_transaction_retries_total',
    help: 'Transaction retries by error label',
    labelNames: ['label'] as const,
    registers: [this.registry],
  });

  private readonly cacheRequests = new Counter({
    name: 'idempotency_cache_requests_total',
    help: 'Calls to the optional Redis fast path by call (early, lookup, wait, store, mark, clear, guard, invalidate) and result (hit, miss, in_flight, ok, error, timeout, skipped_open_circuit, full: Redis at maxmemory, made_room: an erasure dropped cached answers to mark its records)',
    labelNames: ['call', 'result'] as const,
    registers: [this.registry],
  });

  private readonly cacheCircuitState = new Gauge({
    name: 'idempotency_cache_circuit_state',
    help: "The Redis fast path's circuit breaker: 0 closed (in use), 1 half-open (one trial call), 2 open (MongoDB only)",
    registers: [this.registry],
  });

  outcome(operation: string, outcome: IdempotencyOutcome): void {
    this.idempotencyOutcomes.inc({ operation, outcome });
  }

  async timeStore<T>(call: string, run: () => Promise<T>): Promise<T> {
    const stop = this.storeDuration.startTimer({ operation: call });
    try {
      return await run();
    } finally {
      stop();
    }
  }

  leaseWait(operation: string, seconds: number): void {
    this.leaseWaitSeconds.observe({ operation }, seconds);
  }

  keyExpired(operation: string): void {
    this.keysExpired.inc({ operation });
  }

  lateRetry(operation: string): void {
    this.lateRetries.inc({ operation });
  }

  duplicateCreation(operation: string): void {
    this.duplicateCreations.inc({ operation });
  }

  stateConflict(operation: string, what: string): void {
    this.stateConflicts.inc({ operation, what });
  }

  reaperRun(): void {
    this.reaperRuns.inc();
  }

  reaperRecord(decision: string): void {
    this.reaperRecords.inc({ decision });
  }

  oldestPendingAge(seconds: number): void {
    this.oldestPending.set(seconds);
  }

  cacheCall(call: string, result: string): void {
    this.cacheRequests.inc({ call, result });
  }

  cacheCircuit(state: CacheCircuitState): void {
    this.cacheCircuitState.set(CIRCUIT_STATE[state]);
  }

  transactionRetry(label: string): void {
    this.transactionRetries.inc({ label });
  }
}
