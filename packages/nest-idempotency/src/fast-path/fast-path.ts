import { Inject, Injectable } from '@nestjs/common';
import { createHmac } from 'node:crypto';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock } from '../ports.js';
import { IdempotencyMetrics } from '../ports.js';
import { matchesAnyBody, sameFingerprint, storedFingerprint, type Fingerprint } from '../protocol/fingerprint.js';
import type { ErasedRecord } from '../protocol/record.js';
import type { IdempotencyRecord, IdempotentResponse, Lease } from '../protocol/record.js';
import { answeredAt } from '../protocol/record.js';
import type { IdempotentRequest, IdempotentResult } from '../protocol/work.js';
import { InFlightWaiters } from '../protocol/in-flight-waiters.js';
import { StoredResponses } from '../protocol/stored-responses.js';
import { CacheUnavailableError } from '../errors.js';
import {
  decodeEntry,
  decodeMarker,
  encodeEntry,
  encodeMarker,
  judgeEntry,
  Sealer,
  type CacheEntry,
  type InFlightMarker,
} from './cache-entry.js';
import { CacheConnection } from './cache-connection.js';

/**
 * The names of a record's keys in Redis: under the deployment's namespace,
 * by a keyed digest of the record id - which names the tenant and the
 * client's key, and so never appears in clear.
 */
export class RedisKeys {
  private readonly digestKey: Buffer;

  constructor(
    private readonly namespace: string,
    digestKey: Buffer,
  ) {
    this.digestKey = createHmac('sha256', digestKey).update('idempotency-redis-key-v1').digest();
  }

  entry(recordId: string): string {
    return `${this.namespace}:resp:${this.nameOf(recordId)}`;
  }

  marker(recordId: string): string {
    return `${this.namespace}:mark:${this.nameOf(recordId)}`;
  }

  guard(recordId: string): string {
    return `${this.namespace}:erased:${this.nameOf(recordId)}`;
  }

  /** A SCAN pattern for every cached answer of this namespace (never a marker or an erasure's mark). */
  entryPattern(): string {
    return `${this.namespace.replace(/[*?[\]\\]/g, '\\$&')}:resp:*`;
  }

  private nameOf(recordId: string): string {
    return createHmac('sha256', this.digestKey).update(recordId).digest('base64url');
  }
}

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
 * The shortest life of an erasure's mark: longer than any request that read
 * the record before the erasure could take to write it back. A mark lives at
 * least until the record expires, so no entry sealed before the erasure can
 * be put back while it could still be answered.
 */
const ERASURE_GUARD_MS = 60 * 60 * 1000;

/**
 * Making room on a full Redis for an erasure's marks: cached answers dropped
 * per round (each a copy of MongoDB's; ~3 kB, so a round frees ~0.75 MB),
 * and rounds before giving up (503, retry).
 */
const ROOM_ENTRIES = 256;
const ROOM_ROUNDS = 3;

/**
 * The optional Redis fast path (the `fastPath` option). It never decides that a request
 * may run: the claim is MongoDB's transaction. It answers what it can vouch
 * for - a replay of a finished key (sealed response, fingerprint checked),
 * a 422 for another body, a wait on a key whose claim committed elsewhere -
 * and sends everything else to MongoDB, also whenever Redis is slow, down or
 * its circuit open. Keys live under a configured namespace
 * (`fastPath.namespace`) and name a record by a keyed digest of its
 * id, never the tenant or client key in clear; values are authenticated
 * (Sealer). A record an erasure marked is a miss, whatever Redis holds.
 */
@Injectable()
export class IdempotencyFastPath {
  private readonly keys: RedisKeys;
  private readonly sealer: Sealer;

  constructor(
    private readonly cache: CacheConnection,
    private readonly responses: StoredResponses,
    private readonly waiters: InFlightWaiters,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {
    this.keys = new RedisKeys(config.fastPath?.namespace ?? '', config.digestKey);
    this.sealer = new Sealer(config.digestKey);
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
    // A record the previous release erased matches any body, so one that fails validation must not get it.
    if (snapshot.entry && matchesAnyBody(snapshot.entry.fingerprint)) return 'defer';
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
    await this.store(recordId, {
      response: record.response,
      fingerprint: record.fingerprint,
      expiresAt: record.expiresAt.getTime(),
      answeredAt: answeredAt(record).getTime(),
    });
  }

  /** The claim committed and this instance drives the attempt: duplicates elsewhere can wait on Redis. */
  async started(request: IdempotentRequest, lease: Lease): Promise<void> {
    if (!this.cache.enabled) return;
    const marker = encodeMarker({ owner: lease.owner, fingerprint: storedFingerprint(request.fingerprint) });
    // NX: a marker left by an earlier owner is not overwritten (it expires; until then duplicates ask MongoDB after their wait).
    if (
      await this.cache.setIfAbsent(
        'mark',
        this.markerKey(lease.recordId),
        this.sealer.seal(lease.recordId, marker),
        this.config.lockTimeoutMs,
      )
    )
      this.cache.count('mark', 'ok');
  }

  /**
   * The attempt ended. With the response it stored (final: 2xx or a stored
   * client error), the answer is cached first and the marker cleared after,
   * so a waiter sees one or the other, never neither while it is final.
   */
  async finished(request: IdempotentRequest, lease: Lease, response: IdempotentResponse | null): Promise<void> {
    if (!this.cache.enabled) return;
    // The fingerprint the record committed, not the request's: an erasure in flight keyed it (L3 of review 3).
    if (response && response.status < 500 && lease.finishedFingerprint && lease.finishedAt) {
      await this.store(lease.recordId, {
        response: this.responses.seal(lease.recordId, lease.schemaVersion, response),
        fingerprint: lease.finishedFingerprint,
        expiresAt: lease.keyExpiresAt.getTime(),
        answeredAt: lease.finishedAt.getTime(),
      });
    }
    const marker = encodeMarker({ owner: lease.owner, fingerprint: storedFingerprint(request.fingerprint) });
    const sealed = this.sealer.seal(lease.recordId, marker);
    if (await this.cache.deleteIfEqual('clear', this.markerKey(lease.recordId), sealed)) this.cache.count('clear', 'ok');
  }

  get enabled(): boolean {
    return this.cache.enabled;
  }

  /**
   * Before an erasure commits, for the records it is about to change: each
   * is marked, so from now on Redis answers nothing for it (a marked record
   * is a miss) and nothing can be written back. Throws (503, nothing
   * committed) when Redis cannot be told: the erasure fails closed.
   */
  async guardRecords(records: ErasedRecord[]): Promise<void> {
    if (!this.cache.enabled || records.length === 0) return;
    if (!(await this.mark('guard', records, []))) throw new CacheUnavailableError();
  }

  /**
   * After an erasure committed: the cached answers of its records are
   * deleted and each record stays marked until it expires, so a request
   * which read it before the erasure cannot write its old answer back, and
   * no entry sealed before the erasure can be put back. False when Redis
   * cannot be told: the erasure document keeps it due (ErasureCacheSweep).
   */
  async forgetRecords(records: ErasedRecord[]): Promise<boolean> {
    if (!this.cache.enabled || records.length === 0) return true;
    return this.mark('invalidate', records, this.entriesOf(records));
  }

  /**
   * Marks the records (and deletes `drop`) in one transaction. On a full
   * Redis (maxmemory under `noeviction`: writes refused, deletes allowed) it
   * makes room by deleting cached answers - the records' own first, then
   * any of this namespace - and tries again. Cached answers are copies of
   * MongoDB's (a dropped one costs its next replay a MongoDB read); markers
   * and marks are never dropped, and nothing of the erasure commits before
   * its marks are written, so no erased answer can be replayed from Redis.
   */
  private async mark(call: 'guard' | 'invalidate', records: ErasedRecord[], drop: string[]): Promise<boolean> {
    for (let round = 0; ; round++) {
      const written = await this.cache.guardAndDelete(call, this.guardsOf(records), drop, this.guardTtlMs(records));
      if (written === 'ok') {
        this.cache.count(call, 'ok');
        return true;
      }
      if (written === 'failed' || round === ROOM_ROUNDS) return false;
      const dropped = await this.cache.dropKeys(call, this.entriesOf(records), this.keys.entryPattern(), ROOM_ENTRIES);
      if (dropped === null) return false;
      this.cache.count(call, 'made_room');
    }
  }

  private entriesOf(records: ErasedRecord[]): string[] {
    return records.map((record) => this.entryKey(record.recordId));
  }

  private guardsOf(records: ErasedRecord[]): string[] {
    return records.map((record) => this.guardKey(record.recordId));
  }

  private guardTtlMs(records: ErasedRecord[]): number {
    const now = this.clock.now().getTime();
    return Math.max(ERASURE_GUARD_MS, ...records.map((record) => record.expiresAt.getTime() - now));
  }

  private async store(recordId: string, entry: CacheEntry): Promise<void> {
    const ttlMs = entry.expiresAt - this.clock.now().getTime();
    const value = this.sealer.seal(recordId, encodeEntry(entry));
    const written = await this.cache.setUnlessGuarded('store', this.entryKey(recordId), this.guardKey(recordId), value, ttlMs);
    if (written) this.cache.count('store', 'ok');
  }

  private fromEntry(entry: CacheEntry | null, recordId: string, fingerprint: Fingerprint): CachedAnswer | null {
    if (!entry) return null;
    const decision = judgeEntry(entry, fingerprint, this.clock.now());
    if (decision === 'mismatch') return { kind: 'mismatch' };
    if (decision !== 'replay') return null;
    try {
      const response = this.responses.open({ _id: recordId, response: entry.response });
      const result = { response, replayed: true, keyExpiresAt: new Date(entry.expiresAt), originalAt: new Date(entry.answeredAt) };
      return { kind: 'replay', result };
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
    if (deadline <= started) return { kind: 'still_in_flight' };
    const waited = await this.waiters.waitUntil(recordId, deadline, this.config.inFlightMaxWaiters, async () => {
      const snapshot = await this.read('wait', recordId);
      // Redis failing, the marker gone without an answer, another body's marker: MongoDB decides (null).
      if (!snapshot) return null;
      const cached = this.fromEntry(snapshot.entry, recordId, request.fingerprint);
      if (cached) return cached;
      return !snapshot.marker || !sameFingerprint(snapshot.marker.fingerprint, request.fingerprint) ? null : undefined;
    });
    this.metrics.leaseWait(request.operation, (Date.now() - started) / 1000);
    return waited.answered ? waited.value : { kind: 'still_in_flight' };
  }

  private entryKey(recordId: string): string {
    return this.keys.entry(recordId);
  }

  private markerKey(recordId: string): string {
    return this.keys.marker(recordId);
  }

  private guardKey(recordId: string): string {
    return this.keys.guard(recordId);
  }

  /** Entry, marker and the erasure's mark in one round trip; a marked record is a miss. */
  private async read(call: string, recordId: string): Promise<Snapshot | null> {
    const marker = this.markerKey(recordId);
    const reply = await this.cache.read(call, [this.entryKey(recordId), marker, this.guardKey(recordId)], marker);
    if (!reply) return null;
    const [entry, markerValue, guard] = reply.values;
    if (guard !== null) return { entry: null, marker: null, markerTtlMs: null };
    return {
      entry: decodeEntry(entry === null ? null : this.sealer.open(recordId, entry)),
      marker: decodeMarker(markerValue === null ? null : this.sealer.open(recordId, markerValue)),
      markerTtlMs: reply.ttlMs,
    };
  }
}
