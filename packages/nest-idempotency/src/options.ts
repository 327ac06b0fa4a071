import { DEFAULT_PROBLEM_TYPE_BASE_URL } from './problem.js';
import type { IdempotentHttpRequest } from './http/platform.js';
import type { InjectionToken } from '@nestjs/common';
import type { IdempotencyClock, IdempotencyMetrics } from './ports.js';

/** An AES-256-GCM key of stored responses, and the id written next to what it sealed. */
export interface CipherKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
  /** Other ids this key opens (ids an earlier release wrote for it). */
  aliases?: string[];
}

/** The Redis fast path: a cache in front of the records, never their store. Needs `ioredis` and `opossum`. */
export interface FastPathOptions {
  url: string;
  /** Prefix of every Redis key, e.g. `idem:{database}`: deployments sharing a Redis stay apart. */
  namespace: string;
  /** Per command; a slower Redis counts as failed. Default 25. */
  commandTimeoutMs?: number;
  breaker?: {
    /** Failure share that opens the circuit. Default 50. */
    errorPercent?: number;
    /** Calls in the window before it may open. Default 10. */
    volumeThreshold?: number;
    /** How long it stays open before one trial call. Default 5000. */
    resetMs?: number;
  };
}

/** The duplicate guard (see IdempotencyModuleOptions.duplicateGuard). */
export interface DuplicateGuardOptions {
  /** How long a body is remembered after its claim, in seconds (1+). */
  windowSeconds: number;
  /** Whether a tenant gets the guard; every tenant when absent. */
  tenants?: (tenant: string) => boolean;
}

/**
 * Everything the package needs, built by your `useFactory` from your own
 * configuration: the package reads no environment variable.
 */
export interface IdempotencyModuleOptions {
  /** This service's name, part of every record id: never rename a service with live keys (refused at boot). */
  service: string;
  /**
   * The tenant of an authenticated request (a key is private to its tenant); undefined refuses the request.
   * Receives your adapter's request (Express `Request` or `FastifyRequest`: annotate the parameter with yours).
   */
  // A method, not a property: its parameter is checked bivariantly, so `(request: FastifyRequest) => ...` fits.
  tenant(this: void, request: IdempotentHttpRequest): string | undefined;
  /** Stored responses are sealed under `current`; `decrypt` lists every key that may open them (current first). */
  encryption: { current: CipherKey; decrypt?: CipherKey[] };
  /**
   * HMAC key (16+ bytes) of the digests kept of personal data: subject
   * digests, fingerprints an erasure leaves, erased tombstones. Must not
   * change while records and tombstones live.
   */
  digestKey: Buffer;
  /** Retention of a finished key's stored response. Default 86 400 (24 h). */
  ttlSeconds?: number;
  /** Lease of an attempt in progress; a dead worker's work is taken over after it. Default 30 000. */
  lockTimeoutMs?: number;
  /** How long a finished key's tombstone outlives its response (late retries get 409, never a second run). Default 30 days. */
  tombstoneSeconds?: number;
  /** A duplicate of a request in flight waits this long for its answer, then 409; at most `maxWaiters` wait at once. */
  inFlight?: { waitMs?: number; maxWaiters?: number };
  /** An attempt given back after a transient failure is left to its client's retry this long before the reaper takes it. Default 300 000. */
  resumeWindowMs?: number;
  /** Transient transaction errors are retried for this long. Default 5 000. */
  transactionMaxRetryMs?: number;
  /** The scheduled recovery of stale work. Default: enabled, every 10 s, 50 records, 5 s per pass. */
  reaper?: { enabled?: boolean; intervalMs?: number; batchSize?: number; timeBudgetMs?: number };
  /** Off unless set. */
  fastPath?: FastPathOptions;
  /**
   * Off unless set. For clients that mint a new key per retry: on a route
   * declared `@Idempotent({ duplicateGuard: true })`, a request whose body
   * this tenant already sent to the operation under another key in the last
   * `windowSeconds` gets 409 `possible_duplicate` (with `Location` of the
   * earlier result), unless it carries `Idempotency-Intent: new`. `tenants`
   * picks who gets it (default: every tenant). Trade-off: two identical
   * legitimate orders inside the window need the header.
   */
  duplicateGuard?: DuplicateGuardOptions;
  /**
   * Who creates the package's collections and indexes: `'bootstrap'`
   * (default) at application bootstrap, or `'manual'` when your own
   * bootstrap or migrations build every model's indexes.
   */
  indexes?: 'bootstrap' | 'manual';
  /**
   * Base of the `type` URI of the package's problem documents: an absolute
   * http(s) URL ending in `/` (the code follows, `_` as `-`). Default
   * `https://errors.example.com/`: set your own documentation's.
   */
  problemTypeBaseUrl?: string;
  /**
   * Simple mode only (a handler with `@IdempotencySession()`, no
   * `@IdempotencyKey()`): which errors the handler throws mean "try again
   * later" - return the Retry-After in seconds (an integer >= 1), or
   * undefined for any other error. Such an error answers 503 `retry_later`
   * and leaves the key resumable, like a thrown `RetryLaterError`. Default:
   * none (a transaction's TransientTransactionError past
   * `transactionMaxRetryMs` is always retryable, 1 s).
   */
  retryable?(this: void, error: unknown): number | undefined;
  /**
   * Benchmarks only: the same work with no record, no claim, no replay.
   * Never in production (your configuration should refuse it).
   */
  bypass?: boolean;
}

/** Known when the module is defined (they choose providers), not from a factory. */
export interface IdempotencyModuleExtras {
  /** Register once, globally (default true): two instances would mean two reapers and waiters that are never woken. */
  isGlobal?: boolean;
  /** The `@nestjs/mongoose` connection of the records; the default connection when absent. */
  connectionName?: string;
  /** Your providers for the package's ports (aliased with useExisting); defaults otherwise. */
  ports?: {
    clock?: InjectionToken<IdempotencyClock>;
    metrics?: InjectionToken<IdempotencyMetrics>;
  };
}

/** The options with every default filled in, as the package's classes read them. */
export interface IdempotencySettings {
  serviceName: string;
  tenant: (request: IdempotentHttpRequest) => string | undefined;
  encryptionKey: CipherKey;
  decryptionKeys: CipherKey[];
  digestKey: Buffer;
  ttlSeconds: number;
  lockTimeoutMs: number;
  tombstoneSeconds: number;
  inFlightWaitMs: number;
  inFlightMaxWaiters: number;
  resumeWindowMs: number;
  transactionMaxRetryMs: number;
  reaper: { enabled: boolean; intervalMs: number; batchSize: number; timeBudgetMs: number };
  fastPath: (Required<Omit<FastPathOptions, 'breaker'>> & { breaker: Required<NonNullable<FastPathOptions['breaker']>> }) | null;
  duplicateGuard: Required<DuplicateGuardOptions> | null;
  indexes: 'bootstrap' | 'manual';
  /** From the module's extras: the `@nestjs/mongoose` connection of the records. */
  connectionName?: string;
  problemTypeBaseUrl: string;
  retryable: (error: unknown) => number | undefined;
  bypass: boolean;
}

/** The resolved options' injection token (inject it to read what the package runs with). */
export const IDEMPOTENCY_SETTINGS = Symbol('IDEMPOTENCY_SETTINGS');

/** Refused options: every problem at once, named by option path. */
export class IdempotencyOptionsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid IdempotencyModule options:\n  - ${problems.join('\n  - ')}`);
    this.name = 'IdempotencyOptionsError';
  }
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;

/** Fills defaults and validates; throws IdempotencyOptionsError (at boot) listing every problem. */
export function resolveOptions(options: IdempotencyModuleOptions, connectionName?: string): IdempotencySettings {
  const problems: string[] = [];
  const positive = (path: string, value: number | undefined, fallback: number, min = 1): number => {
    const resolved = value ?? fallback;
    if (!Number.isInteger(resolved) || resolved < min) problems.push(`${path}: must be an integer >= ${min} (got ${String(value)})`);
    return resolved;
  };
  if (typeof options?.service !== 'string' || !NAME.test(options.service)) {
    problems.push(`service: 1-64 letters, digits, '_', '.', '-' and no ':' (got ${JSON.stringify(options?.service)})`);
  }
  if (typeof options?.tenant !== 'function') problems.push('tenant: a function (request) => tenant id is required');
  const current = options?.encryption?.current;
  if (!isCipherKey(current)) problems.push('encryption.current: a { id, key } with a 32-byte key is required');
  const decrypt = options?.encryption?.decrypt ?? (current ? [current] : []);
  decrypt.forEach((key, index) => {
    if (!isCipherKey(key)) problems.push(`encryption.decrypt[${index}]: a { id, key } with a 32-byte key`);
  });
  if (current && !decrypt.some((key) => key.id === current.id)) problems.push('encryption.decrypt: must include encryption.current');
  if (!Buffer.isBuffer(options?.digestKey) || options.digestKey.length < 16)
    problems.push('digestKey: a Buffer of at least 16 bytes is required');
  const fast = options?.fastPath;
  if (fast && (typeof fast.url !== 'string' || !/^rediss?:\/\//.test(fast.url))) problems.push('fastPath.url: a redis:// or rediss:// URL');
  if (fast && (typeof fast.namespace !== 'string' || fast.namespace.length === 0)) problems.push('fastPath.namespace: a non-empty prefix');
  const guard = options?.duplicateGuard;
  if (guard && guard.tenants !== undefined && typeof guard.tenants !== 'function')
    problems.push('duplicateGuard.tenants: a function (tenant) => boolean');
  const settings: IdempotencySettings = {
    serviceName: options?.service,
    tenant: options?.tenant,
    encryptionKey: current,
    decryptionKeys: decrypt,
    digestKey: options?.digestKey,
    ttlSeconds: positive('ttlSeconds', options?.ttlSeconds, 86_400),
    lockTimeoutMs: positive('lockTimeoutMs', options?.lockTimeoutMs, 30_000, 100),
    tombstoneSeconds: positive('tombstoneSeconds', options?.tombstoneSeconds, 2_592_000),
    inFlightWaitMs: positive('inFlight.waitMs', options?.inFlight?.waitMs, 5_000, 0),
    inFlightMaxWaiters: positive('inFlight.maxWaiters', options?.inFlight?.maxWaiters, 1_000, 0),
    resumeWindowMs: positive('resumeWindowMs', options?.resumeWindowMs, 300_000, 0),
    transactionMaxRetryMs: positive('transactionMaxRetryMs', options?.transactionMaxRetryMs, 5_000, 0),
    reaper: {
      enabled: options?.reaper?.enabled ?? true,
      intervalMs: positive('reaper.intervalMs', options?.reaper?.intervalMs, 10_000, 10),
      batchSize: positive('reaper.batchSize', options?.reaper?.batchSize, 50),
      timeBudgetMs: positive('reaper.timeBudgetMs', options?.reaper?.timeBudgetMs, 5_000),
    },
    fastPath: fast
      ? {
          url: fast.url,
          namespace: fast.namespace,
          commandTimeoutMs: positive('fastPath.commandTimeoutMs', fast.commandTimeoutMs, 25),
          breaker: {
            errorPercent: positive('fastPath.breaker.errorPercent', fast.breaker?.errorPercent, 50),
            volumeThreshold: positive('fastPath.breaker.volumeThreshold', fast.breaker?.volumeThreshold, 10),
            resetMs: positive('fastPath.breaker.resetMs', fast.breaker?.resetMs, 5_000),
          },
        }
      : null,
    duplicateGuard: guard
      ? { windowSeconds: positive('duplicateGuard.windowSeconds', guard.windowSeconds, 0), tenants: guard.tenants ?? (() => true) }
      : null,
    indexes: options?.indexes ?? 'bootstrap',
    connectionName,
    problemTypeBaseUrl: options?.problemTypeBaseUrl ?? DEFAULT_PROBLEM_TYPE_BASE_URL,
    retryable: options?.retryable ?? (() => undefined),
    bypass: options?.bypass ?? false,
  };
  const typeBase = settings.problemTypeBaseUrl;
  if (typeof typeBase !== 'string' || !URL.canParse(typeBase) || !/^https?:\/\/[^/]+\/(.*\/)?$/.test(typeBase))
    problems.push(`problemTypeBaseUrl: an absolute http(s) URL ending in '/' (got ${JSON.stringify(typeBase)})`);
  if (typeof settings.retryable !== 'function') problems.push('retryable: a function (error) => seconds | undefined');
  if (settings.indexes !== 'bootstrap' && settings.indexes !== 'manual') problems.push("indexes: 'bootstrap' or 'manual'");
  if (problems.length > 0) throw new IdempotencyOptionsError(problems);
  return settings;
}

function isCipherKey(key: CipherKey | undefined): key is CipherKey {
  return !!key && typeof key.id === 'string' && key.id.length > 0 && Buffer.isBuffer(key.key) && key.key.length === 32;
}
