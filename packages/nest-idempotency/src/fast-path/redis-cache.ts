import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { Redis } from 'ioredis';
import CircuitBreaker from 'opossum';
import type { IdempotencySettings } from '../options.js';
import type { IdempotencyMetrics } from '../ports.js';
import { CacheConnection, type CacheWrite } from './cache-connection.js';

/**
 * How a Redis call failed; `idempotency_cache_requests_total{call,result}` counts them (callers count their successes).
 * `full`: Redis refused a write at its maxmemory (OOM, under `noeviction`) - it is up and answering, so this never
 * trips the breaker, and deletes still work (an erasure makes room with them, IdempotencyFastPath).
 */
export type CacheCallFailure = 'error' | 'timeout' | 'skipped_open_circuit' | 'full';

/** Deletes the in-flight marker only while it is still ours (a taken-over attempt's marker is not). */
const DELETE_IF_OWNED = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
/** SET PX unless a guard key exists (an erasure's mark): a write racing the erasure cannot bring its answer back. */
const SET_UNLESS_GUARDED =
  "if redis.call('exists', KEYS[2]) == 1 then return 0 end redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1";

/** Keys a SCAN step looks at while making room (a full Redis of ~86k keys at 256 MB: a few steps). */
const SCAN_BATCH = 500;

/**
 * The Redis connection of the fast path, behind a circuit breaker (opossum).
 * Every call is time-boxed (`fastPath.commandTimeoutMs`) and resolves to null
 * when Redis fails, times out or the circuit is open: callers then ask
 * MongoDB, the store of record. No offline queue (a command while
 * disconnected fails at once instead of waiting for a reconnect), one
 * attempt per command; reconnection runs in the background with capped backoff.
 */
export class RedisCache extends CacheConnection implements OnModuleDestroy {
  readonly enabled = true;
  private readonly logger = new Logger(RedisCache.name);
  private readonly client: Redis;
  private readonly breaker: CircuitBreaker<[() => Promise<unknown>], unknown>;
  private lastErrorLog = 0;

  constructor(
    fastPath: NonNullable<IdempotencySettings['fastPath']>,
    private readonly metrics: IdempotencyMetrics,
  ) {
    super();
    this.client = new Redis(fastPath.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: fastPath.commandTimeoutMs,
      connectTimeout: Math.max(1000, fastPath.commandTimeoutMs),
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
      lazyConnect: false,
    });
    this.client.on('error', (error: Error) => this.logRateLimited(`Redis: ${error.message}`));
    this.breaker = new CircuitBreaker((call: () => Promise<unknown>) => call(), {
      name: 'idempotency-cache',
      timeout: fastPath.commandTimeoutMs,
      errorThresholdPercentage: fastPath.breaker.errorPercent,
      volumeThreshold: fastPath.breaker.volumeThreshold,
      resetTimeout: fastPath.breaker.resetMs,
      rollingCountTimeout: 10_000,
      // A full Redis answers at once and still serves reads and deletes: not an outage to route around.
      errorFilter: (error: unknown) => classify(error) === 'full',
    });
    this.metrics.cacheCircuit('closed');
    this.breaker.on('open', () => this.onCircuit('open'));
    this.breaker.on('halfOpen', () => this.onCircuit('half_open'));
    this.breaker.on('close', () => this.onCircuit('closed'));
  }

  /**
   * Values of these keys (null for a missing one) and the remaining life of
   * `ttlOf` in ms (null: absent), in one round trip; null when Redis cannot answer now.
   */
  async read(call: string, keys: string[], ttlOf: string): Promise<{ values: (string | null)[]; ttlMs: number | null } | null> {
    return this.run(call, async (client) => {
      const replies = await client
        .pipeline()
        .mget(...keys)
        .pttl(ttlOf)
        .exec();
      if (!replies || replies.some(([error]) => error)) throw replies?.find(([error]) => error)?.[0] ?? new Error('empty pipeline reply');
      const ttl = replies[1][1] as number;
      return { values: replies[0][1] as (string | null)[], ttlMs: ttl > 0 ? ttl : null };
    });
  }

  /** Writes key (expiring after ttlMs) unless `guard` exists; false when it was not written. */
  async setUnlessGuarded(call: string, key: string, guard: string, value: string, ttlMs: number): Promise<boolean> {
    if (ttlMs <= 0) return false;
    return (await this.run(call, (client) => client.eval(SET_UNLESS_GUARDED, 2, key, guard, value, String(Math.ceil(ttlMs))))) === 1;
  }

  /** Sets each guard (expiring after ttlMs) and deletes each key, in one transaction; `full`/`failed` when Redis could not be told. */
  async guardAndDelete(call: string, guards: string[], keys: string[], ttlMs: number): Promise<CacheWrite> {
    if (guards.length === 0 && keys.length === 0) return 'ok';
    let full = false;
    const done = await this.run(
      call,
      async (client) => {
        const multi = client.multi();
        for (const guard of guards) multi.set(guard, '1', 'PX', Math.ceil(ttlMs));
        if (keys.length > 0) multi.del(...keys);
        const replies = await multi.exec();
        if (!replies || replies.some(([error]) => error))
          throw replies?.find(([error]) => error)?.[0] ?? new Error('transaction discarded');
        return true;
      },
      (failure) => (full = failure === 'full'),
    );
    if (done === true) return 'ok';
    return full ? 'full' : 'failed';
  }

  /**
   * Deletes `keys`, then up to `max` more keys matching `pattern` (SCAN, a
   * batch at a time): how many went, null when Redis could not be asked.
   * DEL is allowed on a full Redis (it is not a `denyoom` command).
   */
  async dropKeys(call: string, keys: string[], pattern: string, max: number): Promise<number | null> {
    return this.run(call, async (client) => {
      let dropped = keys.length > 0 ? await client.del(...keys) : 0;
      let cursor = '0';
      do {
        const [next, found] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_BATCH);
        cursor = next;
        const batch = found.slice(0, max - dropped);
        if (batch.length > 0) dropped += await client.del(...batch);
      } while (cursor !== '0' && dropped < max);
      return dropped;
    });
  }

  /** SET NX PX: true only if the key was absent and is now ours. */
  async setIfAbsent(call: string, key: string, value: string, ttlMs: number): Promise<boolean> {
    if (ttlMs <= 0) return false;
    return (await this.run(call, (client) => client.set(key, value, 'PX', Math.ceil(ttlMs), 'NX'))) === 'OK';
  }

  /** Deletes key if it still holds value; false when Redis could not be asked. */
  async deleteIfEqual(call: string, key: string, value: string): Promise<boolean> {
    return (await this.run(call, (client) => client.eval(DELETE_IF_OWNED, 1, key, value))) !== null;
  }

  /** Counts a call that Redis answered, as the caller judges it (hit, miss, ok). */
  count(call: string, result: string): void {
    this.metrics.cacheCall(call, result);
  }

  onModuleDestroy(): void {
    this.breaker.shutdown();
    this.client.disconnect();
  }

  private async run<T>(
    call: string,
    command: (client: Redis) => Promise<T>,
    failed?: (failure: CacheCallFailure) => void,
  ): Promise<T | null> {
    const client = this.client;
    try {
      return (await this.breaker.fire(() => command(client))) as T;
    } catch (error) {
      const failure = classify(error);
      this.metrics.cacheCall(call, failure);
      failed?.(failure);
      if (failure !== 'skipped_open_circuit') this.logRateLimited(`Redis ${call} failed: ${(error as Error).message}`);
      return null;
    }
  }

  private onCircuit(state: 'closed' | 'half_open' | 'open'): void {
    this.metrics.cacheCircuit(state);
    const message = `Redis circuit ${state}: ${state === 'closed' ? 'fast path back on' : 'MongoDB only until it closes'}`;
    if (state === 'open') this.logger.warn(message);
    else this.logger.log(message);
  }

  /** Redis down means one failure per request: log one line a second at most. */
  private logRateLimited(message: string): void {
    const now = Date.now();
    if (now - this.lastErrorLog < 1000) return;
    this.lastErrorLog = now;
    this.logger.warn(message);
  }
}

function classify(error: unknown): CacheCallFailure {
  if (isOutOfMemory(error)) return 'full';
  const code = (error as { code?: unknown })?.code;
  if (code === 'EOPENBREAKER') return 'skipped_open_circuit';
  if (code === 'ETIMEDOUT' || /timed? ?out/i.test((error as Error)?.message ?? '')) return 'timeout';
  return 'error';
}

/** Redis's refusal of a write at maxmemory: `OOM command not allowed...`, alone or as the cause of a discarded MULTI. */
function isOutOfMemory(error: unknown): boolean {
  const oom = (candidate: unknown) => /\bOOM\b/.test((candidate as Error)?.message ?? '');
  const previous = (error as { previousErrors?: unknown[] })?.previousErrors;
  return oom(error) || (Array.isArray(previous) && previous.some(oom));
}
