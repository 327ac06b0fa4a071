/** What a write Redis must take came to: `full` is Redis at its maxmemory (deletes still work), `failed` anything else. */
export type CacheWrite = 'ok' | 'full' | 'failed';

/**
 * The fast path's connection to Redis, as the fast path uses it. Every call
 * resolves to null (or false) when Redis cannot answer now: the caller then
 * asks MongoDB, the store of record. RedisCache (loaded only when the
 * `fastPath` option is set, so an app without Redis never loads ioredis) is
 * the real one; NoCache is the fast path switched off.
 */
export abstract class CacheConnection {
  abstract readonly enabled: boolean;
  /** Values of these keys (null for a missing one) and the remaining life of `ttlOf` in ms, in one round trip. */
  abstract read(call: string, keys: string[], ttlOf: string): Promise<{ values: (string | null)[]; ttlMs: number | null } | null>;
  /** Writes key (expiring after ttlMs) unless `guard` exists; false when it was not written. */
  abstract setUnlessGuarded(call: string, key: string, guard: string, value: string, ttlMs: number): Promise<boolean>;
  /** Sets each guard and deletes each key in one transaction; `full` when Redis refused it at maxmemory, `failed` otherwise. */
  abstract guardAndDelete(call: string, guards: string[], keys: string[], ttlMs: number): Promise<CacheWrite>;
  /** Deletes keys, then up to `max` more matching `pattern`; how many went, null when Redis could not be asked. */
  abstract dropKeys(call: string, keys: string[], pattern: string, max: number): Promise<number | null>;
  /** SET NX PX: true only if the key was absent and is now ours. */
  abstract setIfAbsent(call: string, key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Deletes key if it still holds value; false when Redis could not be asked. */
  abstract deleteIfEqual(call: string, key: string, value: string): Promise<boolean>;
  /** Counts a call that Redis answered, as the caller judges it (hit, miss, ok). */
  abstract count(call: string, result: string): void;
}

/** The fast path switched off: nothing is cached, everything goes to MongoDB. */
export class NoCache extends CacheConnection {
  readonly enabled = false;
  read(): Promise<null> {
    return Promise.resolve(null);
  }
  setUnlessGuarded(): Promise<boolean> {
    return Promise.resolve(false);
  }
  guardAndDelete(): Promise<CacheWrite> {
    return Promise.resolve('ok');
  }
  dropKeys(): Promise<number> {
    return Promise.resolve(0);
  }
  setIfAbsent(): Promise<boolean> {
    return Promise.resolve(false);
  }
  deleteIfEqual(): Promise<boolean> {
    return Promise.resolve(false);
  }
  count(): void {}
}
