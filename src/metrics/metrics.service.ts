import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const STORE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * Every metric the service exports, on a registry of its own (several apps
 * can live in one test process). Names are referenced by ops/alerts.rules.yml;
 * a unit test keeps the two in step.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['route', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly httpClientErrors = new Counter({
    name: 'http_client_errors_total',
    help: 'Connections refused by the HTTP parser before a request existed, by reason (timeout, headers_too_large, malformed, reset)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly idempotencyOutcomes = new Counter({
    name: 'idempotency_requests_total',
    help: 'Idempotent requests by operation and outcome (claimed, replayed, in_flight_conflict, payload_mismatch, resumed, restarted, expired, subject_erased)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly duplicateCreations = new Counter({
    name: 'idempotency_duplicate_creations_total',
    help: 'Second business writes for one key stopped by a unique backstop; must stay 0',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly stateConflicts = new Counter({
    name: 'idempotency_state_conflicts_total',
    help: 'Attempts stopped because a document they would write exists with other content (the record shows it); must stay 0',
    labelNames: ['operation', 'what'] as const,
    registers: [this.registry],
  });

  readonly adoptedDocuments = new Counter({
    name: 'workflow_adopted_documents_total',
    help: 'Documents found already written exactly as an attempt would write them (half-applied earlier attempt) and adopted',
    labelNames: ['what'] as const,
    registers: [this.registry],
  });

  readonly storeDuration = new Histogram({
    name: 'idempotency_store_duration_seconds',
    help: 'Latency of idempotency store operations',
    labelNames: ['operation'] as const,
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });

  readonly leaseWait = new Histogram({
    name: 'idempotency_lease_wait_seconds',
    help: 'Time a request waited on another request holding the lease',
    labelNames: ['operation'] as const,
    buckets: [0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });

  readonly keysExpired = new Counter({
    name: 'idempotency_keys_expired_total',
    help: 'Expired records found on lookup and replaced by a new claim',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly lateRetries = new Counter({
    name: 'idempotency_late_retries_total',
    help: 'Retries of an already answered key and body after its retention, answered from a tombstone instead of running again',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly reaperRuns = new Counter({
    name: 'reaper_runs_total',
    help: 'Reaper runs',
    registers: [this.registry],
  });

  readonly reaperRecords = new Counter({
    name: 'reaper_records_total',
    help: 'Records the reaper handled, by decision (completed, abandoned, lost_lease, error, skipped)',
    labelNames: ['decision'] as const,
    registers: [this.registry],
  });

  readonly oldestPendingAge = new Gauge({
    name: 'idempotency_oldest_pending_age_seconds',
    help: 'Age of the oldest pending idempotency record (set by the reaper)',
    registers: [this.registry],
  });

  readonly serverClockOffset = new Gauge({
    name: 'server_clock_offset_seconds',
    help: "MongoDB primary's clock minus this host's clock at the last reading; leases and expiry use the primary's",
    registers: [this.registry],
  });

  readonly outboxBacklog = new Gauge({
    name: 'outbox_backlog',
    help: 'Outbox events not yet published (set by the relay)',
    registers: [this.registry],
  });

  readonly outboxPublished = new Counter({
    name: 'outbox_published_total',
    help: 'Outbox events published',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly outboxPublishFailures = new Counter({
    name: 'outbox_publish_failures_total',
    help: 'Outbox publish attempts that failed',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly transactionRetries = new Counter({
    name: 'mongo_transaction_retries_total',
    help: 'Transaction retries by error label',
    labelNames: ['label'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'rate_limited_requests_total',
    help: 'Requests refused with 429, by limit (key or tenant)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly paymentCharges = new Counter({
    name: 'payment_charge_attempts_total',
    help: 'Calls to the payment provider by result (succeeded, declined, unavailable)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly cacheRequests = new Counter({
    name: 'idempotency_cache_requests_total',
    help: 'Calls to the optional Redis fast path by call (early, lookup, wait, store, mark, clear, invalidate) and result (hit, miss, in_flight, ok, error, timeout, skipped_open_circuit)',
    labelNames: ['call', 'result'] as const,
    registers: [this.registry],
  });

  readonly cacheCircuitState = new Gauge({
    name: 'idempotency_cache_circuit_state',
    help: "The Redis fast path's circuit breaker: 0 closed (in use), 1 half-open (one trial call), 2 open (MongoDB only)",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Times an async store call into idempotency_store_duration_seconds. */
  async timeStore<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const stop = this.storeDuration.startTimer({ operation });
    try {
      return await call();
    } finally {
      stop();
    }
  }
}
