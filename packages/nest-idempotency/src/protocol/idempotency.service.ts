import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock } from '../ports.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { IdempotencyMetrics } from '../ports.js';
import { deriveClaimId } from './ids.js';
import { fingerprintRequest, matchesAnyBody } from './fingerprint.js';
import {
  runsWithoutGuard,
  type IdempotencyKeyContext,
  type IdempotentRequest,
  type IdempotentResult,
  type IdempotentWork,
  type PrefetchedOwner,
} from './work.js';
import {
  AttemptAbandonedError,
  AttemptFailedError,
  DuplicateClaimError,
  IdempotencyKeyCanceledError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  LeaseLostError,
  SubjectErasedError,
} from '../errors.js';
import type { IdempotencyRecord, IdempotentResponse, Lease } from './record.js';
import { IdempotencyAttempts } from './attempts.js';
import { IdempotencyClaims } from './claims.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import { LateRetries } from './tombstones.js';
import { answeredAt, decide, ownRecord } from './record.js';
import { erasedResponse, StoredResponses } from './stored-responses.js';
import { InFlightWaiters } from './in-flight-waiters.js';
import { IdempotencyFastPath, type CachedAnswer } from '../fast-path/fast-path.js';
import { isStoreUnreachable } from '../store/mongo-errors.js';
import { conflictRetryAfterSeconds, inFlightWaitBudgetMs } from './timing.js';
import { resumableUntil } from './timing.js';
import { legacyScopeKeys, scopeKey, type KeyScope } from './ids.js';

export type { IdempotentRequest, IdempotentResult, IdempotentWork } from './work.js';

const MAX_ROUNDS = 4;

/** What the look-up before validation found: a stored answer for this very body, or the record to start from. */
export interface EarlyLookup {
  replay: IdempotentResult | null;
  owner?: PrefetchedOwner;
}

/**
 * The idempotency protocol: claim, replay, conflict, take over, restart.
 * Knows nothing about orders; a consumer hands it an IdempotentWork.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly claims: IdempotencyClaims,
    private readonly attempts: IdempotencyAttempts,
    private readonly lateRetries: LateRetries,
    private readonly transactions: TransactionRunner,
    private readonly responses: StoredResponses,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    private readonly waiters: InFlightWaiters,
    private readonly fastPath: IdempotencyFastPath,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  /** The record id of a key: one per (tenant, operation, client key), whatever the schema version. */
  recordIdFor(request: Pick<IdempotentRequest, 'tenant' | 'operation' | 'clientKey'>): string {
    return scopeKey(this.scopeOf(request));
  }

  private scopeOf(request: Pick<IdempotentRequest, 'tenant' | 'operation' | 'clientKey'>): KeyScope {
    return { tenant: request.tenant, operation: request.operation, clientKey: request.clientKey, service: this.config.serviceName };
  }

  /** Binds a validated key to this tenant and this exact request body. */
  requestFor(key: IdempotencyKeyContext, tenant: string, body: unknown, subject?: string): IdempotentRequest {
    return {
      tenant,
      operation: key.operation,
      clientKey: key.clientKey,
      schemaVersion: key.schemaVersion,
      ttlSeconds: key.ttlSeconds ?? this.config.ttlSeconds,
      fingerprint: fingerprintRequest(key.method, { route: key.route, params: key.params }, body, this.config.digestKey),
      subject,
      onStoreDown: key.onStoreDown ?? 'closed',
      receivedAt: this.clock.now(),
      prefetched: key.prefetched,
      duplicateGuard: key.duplicateGuard,
    };
  }

  /**
   * The key's look-up, made before the body is validated. When the record
   * holds a stored answer for this exact body (the fingerprint of the parsed
   * body: a body that matches a stored fingerprint passed validation when it
   * was first sent), that answer is the reply: a replay costs one read, not a
   * validation and a handler. Anything else (a new key, another body, work
   * in flight, a record the previous release erased, whose answer a body
   * that fails validation must not get) goes through validation and
   * execute(), which starts from the record read here.
   */
  async lookUpEarly(key: IdempotencyKeyContext, tenant: string, body: unknown): Promise<EarlyLookup> {
    if (this.config.bypass) return { replay: null };
    const scope = { tenant, operation: key.operation, clientKey: key.clientKey, schemaVersion: key.schemaVersion };
    const fingerprint = fingerprintRequest(key.method, { route: key.route, params: key.params }, body, this.config.digestKey);
    const recordId = this.recordIdFor(scope);
    // The optional Redis fast path first: a replay it holds costs no MongoDB read.
    const cached = await this.fastPath.replayEarly(recordId, fingerprint);
    if (cached === 'defer') return { replay: null };
    if (cached) {
      this.count(key, 'replayed');
      return { replay: cached };
    }
    let record: IdempotencyRecord | null;
    try {
      record = await this.metrics.timeStore('lookup', () => this.findOwner(recordId, scope));
    } catch (error) {
      // An 'open' route goes on to its handler, which decides (execute() runs it unguarded if the store is still down).
      if (key.onStoreDown === 'open' && isStoreUnreachable(error)) return { replay: null };
      throw error;
    }
    const decision = record ? decide(record, fingerprint, this.clock.now()) : null;
    // A canceled key refuses every body, valid or not: nothing under it runs again.
    if (record && decision === 'canceled') throw this.canceled(record, key);
    // A record the previous release erased matches any body, so one that fails validation must not get its answer.
    if (record && !matchesAnyBody(record.fingerprint) && decision === 'replay') {
      this.count(key, 'replayed');
      return { replay: await this.replay(record, recordId) };
    }
    return { replay: null, owner: { record } };
  }

  async execute(request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult> {
    if (this.config.bypass) return this.executeUnguarded(request, work);
    try {
      return await this.guarded(request, work);
    } catch (error) {
      if (!runsWithoutGuard(request.onStoreDown, work, error)) throw error;
      // @Idempotent({ onStoreDown: 'open' }): the route's own writes are naturally idempotent; nothing is recorded.
      this.count(request, 'unguarded_store_down');
      return { response: await work.withoutGuard!(), replayed: false, keyExpiresAt: this.clock.now() };
    }
  }

  private async guarded(request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult> {
    const recordId = this.recordIdFor(request);
    // The optional Redis fast path answers what it can vouch for; MongoDB decides the rest. A key found
    // absent just before validation has nothing in Redis worth a round trip.
    const absent = request.prefetched !== undefined && request.prefetched.record === null;
    const cached = absent ? null : await this.fastPath.answer(recordId, request);
    const answered = this.onCached(cached, request);
    if (answered) return answered;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // Read first: a replay costs one look-up, not an aborted claim transaction. The first round may start
      // from the record read before validation - not after waiting on Redis: that record is older than the wait.
      const prefetched = round === 0 && cached === null ? request.prefetched : undefined;
      const record = prefetched ? prefetched.record : await this.metrics.timeStore('lookup', () => this.findOwner(recordId, request));
      // Already waited its budget on Redis: a key MongoDB confirms in flight is answered 409 without waiting again.
      if (
        cached?.kind === 'still_in_flight' &&
        round === 0 &&
        record &&
        decide(record, request.fingerprint, this.clock.now()) === 'in_flight'
      ) {
        this.count(request, 'in_flight_conflict');
        throw new IdempotencyKeyInUseError(conflictRetryAfterSeconds(record.lease?.expiresAt ?? null, this.clock.now()));
      }
      const result = await this.onRecord(record, recordId, request, work);
      if (result) return result;
    }
    // Every round lost a race: the key is hot; tell the client to come back.
    throw new IdempotencyKeyInUseError(1);
  }

  /** The fast path's own answers: a replay or a 422; null to ask MongoDB. */
  private onCached(cached: CachedAnswer | null, request: IdempotentRequest): IdempotentResult | null {
    if (cached?.kind === 'mismatch') {
      this.count(request, 'payload_mismatch');
      throw new IdempotencyKeyReusedError();
    }
    if (cached?.kind !== 'replay') return null;
    this.count(request, 'replayed');
    return cached.result;
  }

  /**
   * The `bypass` option (benchmarks only): the same business work
   * with no record at all - no claim, no replay, no fencing. It exists only so
   * the benchmark can measure what the idempotency layer costs.
   */
  private async executeUnguarded(request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult> {
    const now = this.clock.now();
    const lease: Lease = {
      recordId: this.recordIdFor(request),
      owner: 'unguarded',
      attempt: 1,
      claimId: deriveClaimId(randomUUID(), now, 1),
      schemaVersion: request.schemaVersion,
      ttlSeconds: request.ttlSeconds,
      keyExpiresAt: now,
      recoveryPoint: null,
    };
    await this.transactions.run((session) => work.begin(session, lease));
    return { response: await work.resume(lease), replayed: false, keyExpiresAt: now };
  }

  /** Claims an absent key; null when another request claimed it first (go round and read theirs). */
  private async claimAndDrive(recordId: string, request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult | null> {
    // An absent key may be one purged after retention: a late retry of the answered request must not run again.
    const late = await this.lateRetries.answer(request);
    if (late) return late;
    const lease = await this.claims.claim('new', recordId, null, request, work);
    return lease ? this.drive(request, lease, work, 'claimed') : null;
  }

  private async onRecord(
    record: IdempotencyRecord | null,
    recordId: string,
    request: IdempotentRequest,
    work: IdempotentWork,
  ): Promise<IdempotentResult | null> {
    try {
      return record ? await this.onExisting(record, request, work) : await this.claimAndDrive(recordId, request, work);
    } catch (error) {
      if (!(error instanceof SubjectErasedError)) throw error;
      this.count(request, 'subject_erased');
      return { response: erasedResponse(), replayed: false, keyExpiresAt: this.clock.now() };
    }
  }

  /** Returns a result, or null to go round again (the record changed under us). */
  private async onExisting(record: IdempotencyRecord, request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult | null> {
    switch (decide(record, request.fingerprint, this.clock.now())) {
      case 'mismatch':
        this.count(request, 'payload_mismatch');
        throw new IdempotencyKeyReusedError();
      case 'replay':
        this.count(request, 'replayed');
        return this.replay(record, this.recordIdFor(request));
      case 'in_flight':
        return this.waitForLease(record, request);
      case 'take_over':
        return this.takeOver(record, request, work);
      case 'restart':
        return this.startOver(record, request, work, 'restarted');
      case 'canceled':
        throw this.canceled(record, request);
      case 'erased':
        this.count(request, 'replayed');
        return { response: erasedResponse(), replayed: true, keyExpiresAt: record.expiresAt, originalAt: answeredAt(record) };
      case 'replace_expired':
        // A legacy-id record that just expired is not replaced: the next round claims the key's own id.
        if (record._id !== this.recordIdFor(request)) return null;
        return (await this.lateRetries.answer(request)) ?? this.replaceExpired(record, request, work);
    }
  }

  /**
   * The record that owns the key. Its id has no schema version, so instances
   * on different versions meet on one _id and the claim insert decides; a
   * live record under an id of an earlier release still owns the key.
   */
  private async findOwner(
    recordId: string,
    request: Pick<IdempotentRequest, 'tenant' | 'operation' | 'clientKey' | 'schemaVersion'>,
  ): Promise<IdempotencyRecord | null> {
    const record = await this.records.findOwner(recordId, legacyScopeKeys(this.scopeOf(request), request.schemaVersion), this.clock.now());
    try {
      return ownRecord(record, request);
    } catch (error) {
      this.count(request, 'payload_mismatch');
      throw error;
    }
  }

  /** A finished key past retention whose request is new (another body, or no tombstone): claimed afresh. */
  private replaceExpired(record: IdempotencyRecord, request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult | null> {
    this.metrics.keyExpired(request.operation);
    return this.startOver(record, request, work, 'expired');
  }

  private async startOver(
    old: IdempotencyRecord,
    request: IdempotentRequest,
    work: IdempotentWork,
    outcome: 'restarted' | 'expired',
  ): Promise<IdempotentResult | null> {
    const lease = await this.claims.claim(outcome === 'expired' ? 'replace_expired' : 'restart', old._id, old, request, work);
    return lease ? this.drive(request, lease, work, outcome) : null;
  }

  private async takeOver(old: IdempotencyRecord, request: IdempotentRequest, work: IdempotentWork): Promise<IdempotentResult | null> {
    const lease = await this.claims.takeOver(old);
    return lease ? this.drive(request, lease, work, 'resumed') : null;
  }

  /**
   * Waits for the answer of a record held by someone else, then 409. The wait
   * is bounded by `inFlight.waitMs` and by the holder's lease (past
   * it the next round takes over). Work driven in this instance wakes its
   * waiters when it ends (one shared read for all of them); work elsewhere is
   * polled with backoff, reads shared by the waiters of the key.
   */
  private async waitForLease(record: IdempotencyRecord, request: IdempotentRequest): Promise<IdempotentResult | null> {
    const started = Date.now();
    const budget = inFlightWaitBudgetMs(this.config.inFlightWaitMs, record.lease?.expiresAt ?? null, this.clock.now());
    let current: IdempotencyRecord | null = record;
    const waited = await this.waiters.waitUntil(record._id, started + budget, this.config.inFlightMaxWaiters, async () => {
      current = await this.waiters.read(record._id, () =>
        this.metrics.timeStore('in_flight_wait', () => this.records.findById(record._id)),
      );
      // Finished, released, gone or changed hands: the next round reads it and decides.
      return !current || decide(current, request.fingerprint, this.clock.now()) !== 'in_flight' ? true : undefined;
    });
    this.metrics.leaseWait(request.operation, (Date.now() - started) / 1000);
    if (waited.answered) return null;
    this.count(request, 'in_flight_conflict');
    throw new IdempotencyKeyInUseError(conflictRetryAfterSeconds(current?.lease?.expiresAt ?? null, this.clock.now()));
  }

  private async drive(request: IdempotentRequest, lease: Lease, work: IdempotentWork, outcome: string): Promise<IdempotentResult | null> {
    this.count(request, outcome);
    this.waiters.begin(lease.recordId);
    let response: IdempotentResponse | null = null;
    try {
      await this.fastPath.started(request, lease);
      response = await work.resume(lease);
      return { response, replayed: false, keyExpiresAt: lease.keyExpiresAt };
    } catch (error) {
      if (error instanceof LeaseLostError) {
        // Someone took over while we worked; our writes changed nothing. Report what they did.
        this.logger.warn(`Lease lost on ${request.operation}; re-reading the record`);
        return null;
      }
      if (error instanceof AttemptAbandonedError) return null;
      // The work failed its record itself (simple mode: nothing it wrote committed): no lease left to give back.
      if (error instanceof AttemptFailedError) throw error.reason;
      if (error instanceof DuplicateClaimError) await this.attempts.reportConflict(lease, request.operation, error);
      // Not finished and nothing to store: give the lease back so the next retry resumes at once.
      // After a transient failure the client's retry resumes this same attempt (same
      // order, same charge key): the reaper leaves it to them for `resumeWindowMs`.
      const now = this.clock.now();
      const until = resumableUntil(error, now, this.config.resumeWindowMs);
      const released = await this.records.release(lease, now, until).catch(() => false);
      if (!released) this.logger.warn(`Could not release lease after failure on ${request.operation}`);
      throw error;
    } finally {
      await this.fastPath.finished(request, lease, response);
      // Wake this instance's duplicates waiting on the key: one read each tells them the outcome.
      this.waiters.end(lease.recordId);
    }
  }

  private async replay(record: IdempotencyRecord, recordId: string): Promise<IdempotentResult> {
    const response = this.responses.open(record);
    await this.fastPath.remember(recordId, record);
    return { response, replayed: true, keyExpiresAt: record.expiresAt, originalAt: answeredAt(record) };
  }

  /** The 409 for a canceled key, naming what it created (the undone resource) when it did. */
  private canceled(record: IdempotencyRecord, request: Pick<IdempotentRequest, 'operation'>): IdempotencyKeyCanceledError {
    this.count(request, 'key_canceled');
    return new IdempotencyKeyCanceledError(record.cancellation?.location ?? record.response?.headers?.['location'] ?? null);
  }

  private count(request: Pick<IdempotentRequest, 'operation'>, outcome: string): void {
    this.metrics.outcome(request.operation, outcome);
  }
}
