import { Inject, Injectable } from '@nestjs/common';
import { idempotencyConfig, mongoConfig, type IdempotencyConfig, type MongoConfig } from '../../config/config.tokens.js';
import { Clock } from '../../common/clock.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { isErasedFingerprint, sameFingerprint, storedFingerprint, type Fingerprint } from '../fingerprint.js';
import type { IdempotencyRecord, IdempotentResponse, Lease } from '../idempotency-record.js';
import type { IdempotentRequest, IdempotentResult } from '../idempotent-work.js';
import { InFlightWaiters } from '../in-flight-waiters.js';
import { nextPollDelayMs } from '../retry-after.js';
import { StoredResponses } from '../stored-responses.js';
import { CacheInvalidationFailedError } from './cache-invalidation-failed.error.js';
import { decodeEntry, decodeMarker, encodeEntry, encodeMarker, judgeEntry, type CacheEntry, type InFlightMarker } from './cache-entry.js';
import { RedisCache } from './redis-cache.js';

/** What the fast path can say before MongoDB is asked; null from answer() means "ask MongoDB". */
export type CachedAnswer =
  | { kind: 'replay'; result: IdempotentResult }
  | { kind: 'mismatch' }
  /** Waited on a live in-flight marker for the whole wait budget: MongoDB confirms the 409 with one read. */
  | { kind: 'still_in_flight' };

interface Snapshot {
  entry: CacheEntry | null;
  marker: InFlightMarker | null;
  markerTtlMs: number | null;
}

/**
 * How long an erasure's mark keeps answers of an erased record out of
 * Redis: longer than any request that read the record before the erasure
 * could take to write it back. After it, the record's (410) answer is cached
 * like any other.
 */
const ERASURE_GUARD_MS = 60 * 60 * 1000;

/**
 * The optional Redis fast path (REDIS_URL). It never decides that a request
 * may run: the claim is MongoDB's transaction. It answers what it can vouch
 * for - a replay of a finished key (sealed response, fingerprint checked),
 * a 422 for another body, a wait on a key whose claim committed elsewhere -
 * and sends everything else to MongoDB, also whenever Redis is slow, down or
 * its circuit open. Keys name the database they mirror: deployments sharing
 * one Redis never read each other's answers.
 */
@Injectable()
export class IdempotencyFastPath {
  private readonly prefix: string;

  constructor(
    private readonly cache: RedisCache,
    private readonly responses: StoredResponses,
    private readonly waiters: InFlightWaiters,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    @Inject(idempotencyConfig.KEY) private readonly config: IdempotencyConfig,
    @Inject(mongoConfig.KEY) mongo: MongoConfig,
  ) {
    this.prefix = `idem:${mongo.dbName}:`;
  }

  /**
   * Before the body is validated: a replay of this very body; 'defer' when
   * Redis knows the key otherwise (another body's answer, a marker) - the
   * validated request is judged by answer(), with no MongoDB read before;
   * null when Redis knows nothing (or cannot answer): ask MongoDB.
   */
  async replayEarly(recordId: string, fingerprint: Fingerprint): Promise<IdempotentResult | 'defer' | null> {
    if (!this.cache.enabled) return null;
    const snapshot = await this.read('early', recordId);
    if (!snapshot) return null;
    // An erased answer matches any body, so one that fails validation must not get it: judged after validation.
    if (snapshot.entry && isErasedFingerprint(snapshot.entry.fingerprint)) return 'defer';
    const cached = this.fromEntry(snapshot.entry, recordId, fingerprint);
    this.cache.count('early', cached?.kind === 'replay' ? 'hit' : 'miss');
    if (cached?.kind === 'replay') return cached.result;
    return cached || snapshot.marker ? 'defer' : null;
  }

  /** A validated request: a replay, a 422, or a wait on a key in flight; null to ask MongoDB. */
  async answer(recordId: string, request: IdempotentRequest): Promise<CachedAnswer | null> {
    if (!this.cache.enabled) return null;
    const snapshot = await this.read('lookup', recordId);
    if (!snapshot) return null;
    const cached = this.fromEntry(snapshot.entry, recordId, request.fingerprint);
    if (cached) {
      this.cache.count('lookup', 'hit');
      return cached;
    }
    if (snapshot.marker && sameFingerprint(snapshot.marker.fingerprint, request.fingerprint)) {
      this.cache.count('lookup', 'in_flight');
      return this.waitOnMarker(recordId, request, snapshot.markerTtlMs ?? 0);
    }
    this.cache.count('lookup', 'miss');
    return null;
  }

  /** MongoDB replayed a finished record: keep it for the next replay. */
  async remember(recordId: string, record: IdempotencyRecord): Promise<void> {
    if (!this.cache.enabled || !record.response || record._id !== recordId) return;
    await this.store(recordId, { response: record.response, fingerprint: record.fingerprint, expiresAt: record.expiresAt.getTime() });
  }

  /** The claim committed and this instance drives the attempt: duplicates elsewhere can wait on Redis. */
  async started(request: IdempotentRequest, lease: Lease): Promise<void> {
    if (!this.cache.enabled) return;
    const marker = encodeMarker({ owner: lease.owner, fingerprint: storedFingerprint(request.fingerprint) });
    // NX: a marker left by an earlier owner is not overwritten (it expires; until then duplicates ask MongoDB after their wait).
    if (await this.cache.setIfAbsent('mark', this.markerKey(lease.recordId), marker, this.config.lockTimeoutMs))
      this.cache.count('mark', 'ok');
  }

  /**
   * The attempt ended. With the response it stored (final: 2xx or a stored
   * client error), the answer is cached first and the marker cleared after,
   * so a waiter sees one or the other, never neither while it is final.
   */
  async finished(request: IdempotentRequest, lease: Lease, response: IdempotentResponse | null): Promise<void> {
    if (!this.cache.enabled) return;
    if (response && response.status < 500) {
      await this.store(lease.recordId, {
        response: this.responses.seal(lease.recordId, lease.schemaVersion, response),
        fingerprint: storedFingerprint(request.fingerprint),
        expiresAt: lease.keyExpiresAt.getTime(),
      });
    }
    const marker = encodeMarker({ owner: lease.owner, fingerprint: storedFingerprint(request.fingerprint) });
    if (await this.cache.deleteIfEqual('clear', this.markerKey(lease.recordId), marker)) this.cache.count('clear', 'ok');
  }

  /**
   * After an erasure committed: the cached answers of its records are
   * deleted, and each record is marked for an hour so that a request which
   * read it before the erasure cannot write its old answer back. Throws
   * (503) when Redis cannot be told: the erasure must be retried.
   */
  async forgetRecords(recordIds: string[]): Promise<void> {
    if (!this.cache.enabled || recordIds.length === 0) return;
    const guards = recordIds.map((id) => this.guardKey(id));
    const keys = recordIds.map((id) => this.entryKey(id));
    if (!(await this.cache.guardAndDelete('invalidate', guards, keys, ERASURE_GUARD_MS))) throw new CacheInvalidationFailedError();
    this.cache.count('invalidate', 'ok');
  }

  private async store(recordId: string, entry: CacheEntry): Promise<void> {
    const ttlMs = entry.expiresAt - this.clock.now().getTime();
    const written = await this.cache.setUnlessGuarded('store', this.entryKey(recordId), this.guardKey(recordId), encodeEntry(entry), ttlMs);
    if (written) this.cache.count('store', 'ok');
  }

  private fromEntry(entry: CacheEntry | null, recordId: string, fingerprint: Fingerprint): CachedAnswer | null {
    if (!entry) return null;
    const decision = judgeEntry(entry, fingerprint, this.clock.now());
    if (decision === 'mismatch') return { kind: 'mismatch' };
    if (decision !== 'replay') return null;
    try {
      const response = this.responses.open({ _id: recordId, response: entry.response });
      return { kind: 'replay', result: { response, replayed: true, keyExpiresAt: new Date(entry.expiresAt) } };
    } catch {
      // Sealed under a key this instance no longer has: MongoDB's copy decides.
      return null;
    }
  }

  /**
   * The key's claim committed with this body and its attempt is running
   * (elsewhere, or here): wait for its answer on Redis instead of polling
   * MongoDB. Anything unexpected - Redis failing, the marker gone without an
   * answer, another body's marker - goes to MongoDB.
   */
  private async waitOnMarker(recordId: string, request: IdempotentRequest, markerTtlMs: number): Promise<CachedAnswer | null> {
    const started = Date.now();
    const deadline = started + Math.min(this.config.inFlightWaitMs, markerTtlMs);
    if (deadline <= started || !this.waiters.enter(this.config.inFlightMaxWaiters)) return { kind: 'still_in_flight' };
    try {
      let delay: number | null = null;
      while (Date.now() < deadline) {
        const local = this.waiters.runningHere(recordId);
        if (!local) delay = nextPollDelayMs(delay);
        const left = deadline - Date.now();
        await this.waiters.sleep(recordId, local || delay === null ? left : Math.min(delay, left));
        const snapshot = await this.read('wait', recordId);
        if (!snapshot) return null;
        const cached = this.fromEntry(snapshot.entry, recordId, request.fingerprint);
        if (cached) return cached;
        if (!snapshot.marker || !sameFingerprint(snapshot.marker.fingerprint, request.fingerprint)) return null;
      }
      return { kind: 'still_in_flight' };
    } finally {
      this.waiters.leave();
      this.metrics.leaseWait.observe({ operation: request.operation }, (Date.now() - started) / 1000);
    }
  }

  private entryKey(recordId: string): string {
    return `${this.prefix}resp:${recordId}`;
  }

  private markerKey(recordId: string): string {
    return `${this.prefix}mark:${recordId}`;
  }

  private guardKey(recordId: string): string {
    return `${this.prefix}erased:${recordId}`;
  }

  private async read(call: string, recordId: string): Promise<Snapshot | null> {
    const reply = await this.cache.read(call, [this.entryKey(recordId), this.markerKey(recordId)], this.markerKey(recordId));
    if (!reply) return null;
    const [entry, marker] = reply.values;
    return { entry: decodeEntry(entry), marker: decodeMarker(marker), markerTtlMs: reply.ttlMs };
  }
}
