import { Inject, Injectable } from '@nestjs/common';
import { idempotencyConfig, mongoConfig, type IdempotencyConfig, type MongoConfig } from '../../config/config.tokens.js';
import { Clock } from '../../common/clock.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { sameFingerprint, storedFingerprint } from '../fingerprint.js';
import type { IdempotencyRecord, IdempotentResponse, Lease } from '../idempotency-record.js';
import type { IdempotentRequest, IdempotentResult } from '../idempotent-work.js';
import { InFlightWaiters } from '../in-flight-waiters.js';
import { nextPollDelayMs } from '../retry-after.js';
import { StoredResponses } from '../stored-responses.js';
import { subjectDigest } from '../subject.js';
import { CacheInvalidationFailedError } from './cache-invalidation-failed.error.js';
import {
  decodeEntry,
  decodeGeneration,
  decodeMarker,
  encodeEntry,
  encodeMarker,
  judgeEntry,
  type CacheEntry,
  type InFlightMarker,
} from './cache-entry.js';
import { RedisCache } from './redis-cache.js';

/** What the fast path can say before MongoDB is asked; null from answer() means "ask MongoDB". */
export type CachedAnswer =
  | { kind: 'replay'; result: IdempotentResult }
  | { kind: 'mismatch' }
  /** Waited on a live in-flight marker for the whole wait budget: MongoDB confirms the 409 with one read. */
  | { kind: 'still_in_flight' };

/** What this request's look-up saw: later writes for it carry that erasure generation, never a newer one. */
interface Seen {
  recordId: string;
  subject: string | null;
  generation: number;
}

interface Snapshot {
  entry: CacheEntry | null;
  marker: InFlightMarker | null;
  markerTtlMs: number | null;
  generation: number;
}

/**
 * The optional Redis fast path (REDIS_URL). It never decides that a request
 * may run: the claim is MongoDB's transaction. It answers what it can vouch
 * for - a replay of a finished key (sealed response, fingerprint checked),
 * a 422 for another body, a wait on a key whose claim committed elsewhere -
 * and sends everything else to MongoDB, also whenever Redis is slow, down or
 * its circuit open.
 */
@Injectable()
export class IdempotencyFastPath {
  private readonly seen = new WeakMap<IdempotentRequest, Seen>();
  /** Keys name the database they mirror: two deployments sharing one Redis never read each other's answers. */
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

  async answer(recordId: string, request: IdempotentRequest): Promise<CachedAnswer | null> {
    if (!this.cache.enabled) return null;
    const subject = request.subject ? subjectDigest(request.tenant, request.subject) : null;
    const snapshot = await this.read('lookup', recordId, subject);
    if (!snapshot) return null;
    const seen: Seen = { recordId, subject, generation: snapshot.generation };
    this.seen.set(request, seen);
    const cached = this.fromEntry(snapshot.entry, request, seen);
    if (cached) {
      this.cache.count('lookup', 'hit');
      return cached;
    }
    if (snapshot.marker && sameFingerprint(snapshot.marker.fingerprint, request.fingerprint)) {
      this.cache.count('lookup', 'in_flight');
      return this.waitOnMarker(request, seen, snapshot.markerTtlMs ?? 0);
    }
    this.cache.count('lookup', 'miss');
    return null;
  }

  /** MongoDB replayed a finished record: keep it for the next replay. */
  async remember(request: IdempotentRequest, record: IdempotencyRecord): Promise<void> {
    const seen = this.seen.get(request);
    if (!seen || !record.response || record._id !== seen.recordId) return;
    await this.store(seen, {
      response: record.response,
      fingerprint: record.fingerprint,
      expiresAt: record.expiresAt.getTime(),
      subject: seen.subject,
      generation: seen.generation,
    });
  }

  /** The claim committed and this instance drives the attempt: duplicates elsewhere can wait on Redis. */
  async started(request: IdempotentRequest, lease: Lease): Promise<void> {
    const seen = this.seen.get(request);
    if (!seen || lease.recordId !== seen.recordId) return;
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
    const seen = this.seen.get(request);
    if (!seen || lease.recordId !== seen.recordId) return;
    if (response && response.status < 500) {
      await this.store(seen, {
        response: this.responses.seal(lease.recordId, lease.schemaVersion, response),
        fingerprint: storedFingerprint(request.fingerprint),
        expiresAt: lease.keyExpiresAt.getTime(),
        subject: seen.subject,
        generation: seen.generation,
      });
    }
    const marker = encodeMarker({ owner: lease.owner, fingerprint: storedFingerprint(request.fingerprint) });
    if (await this.cache.deleteIfEqual('clear', this.markerKey(lease.recordId), marker)) this.cache.count('clear', 'ok');
  }

  /**
   * After an erasure committed: every cached answer of the subject becomes
   * unreadable (its generation moves on), including one a concurrent replay
   * writes from what it read before the erasure. Throws when Redis cannot be
   * told: the erasure must then be retried, or the cache flushed.
   */
  async forgetSubject(tenant: string, subject: string): Promise<void> {
    if (!this.cache.enabled) return;
    if ((await this.cache.increment('invalidate', this.generationKey(subjectDigest(tenant, subject)))) === null) {
      throw new CacheInvalidationFailedError();
    }
    this.cache.count('invalidate', 'ok');
  }

  private async store(seen: Seen, entry: CacheEntry): Promise<void> {
    const ttlMs = entry.expiresAt - this.clock.now().getTime();
    if (await this.cache.set('store', this.entryKey(seen.recordId), encodeEntry(entry), ttlMs)) this.cache.count('store', 'ok');
  }

  private fromEntry(entry: CacheEntry | null, request: IdempotentRequest, seen: Seen): CachedAnswer | null {
    if (!entry) return null;
    const decision = judgeEntry(
      entry,
      { fingerprint: request.fingerprint, subject: seen.subject, generation: seen.generation },
      this.clock.now(),
    );
    if (decision === 'mismatch') return { kind: 'mismatch' };
    if (decision !== 'replay') return null;
    try {
      const response = this.responses.open({ _id: seen.recordId, response: entry.response });
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
  private async waitOnMarker(request: IdempotentRequest, seen: Seen, markerTtlMs: number): Promise<CachedAnswer | null> {
    const started = Date.now();
    const deadline = started + Math.min(this.config.inFlightWaitMs, markerTtlMs);
    if (deadline <= started || !this.waiters.enter(this.config.inFlightMaxWaiters)) return { kind: 'still_in_flight' };
    try {
      let delay: number | null = null;
      while (Date.now() < deadline) {
        const local = this.waiters.runningHere(seen.recordId);
        if (!local) delay = nextPollDelayMs(delay);
        const left = deadline - Date.now();
        await this.waiters.sleep(seen.recordId, local || delay === null ? left : Math.min(delay, left));
        const snapshot = await this.read('wait', seen.recordId, seen.subject);
        if (!snapshot) return null;
        const cached = this.fromEntry(snapshot.entry, request, seen);
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

  private generationKey(subject: string): string {
    return `${this.prefix}gen:${subject}`;
  }

  private async read(call: string, recordId: string, subject: string | null): Promise<Snapshot | null> {
    const keys = [this.entryKey(recordId), this.markerKey(recordId), ...(subject ? [this.generationKey(subject)] : [])];
    const reply = await this.cache.read(call, keys, this.markerKey(recordId));
    if (!reply) return null;
    const [entry, marker, generation] = reply.values;
    return {
      entry: decodeEntry(entry),
      marker: decodeMarker(marker),
      markerTtlMs: reply.ttlMs,
      generation: subject ? decodeGeneration(generation ?? null) : 0,
    };
  }
}
