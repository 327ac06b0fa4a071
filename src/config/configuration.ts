import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { plainToInstance } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';

/** Every FaultPoint (below), for FAULT_CRASH_AT's validation: a point the code has is a point the variable accepts. */
export const FAULT_POINTS = [
  'after-claim',
  'after-charge',
  'after-charged',
  'before-response',
  'after-refund-claim',
  'after-refund-provider',
  'after-capture-claim',
  'after-capture-provider',
  'after-void-claim',
  'after-void-provider',
] as const;

/**
 * Every setting the service reads, validated once. Values arrive as strings
 * from the environment; `enableImplicitConversion` turns them into numbers
 * and booleans before the checks run.
 */
class EnvironmentVariables {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: string = 'development';

  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  // Unset: every interface (0.0.0.0), or loopback only while the dev tenant is active.
  @IsOptional()
  @IsString()
  HOST?: string;

  // /metrics on a listener of its own (never the API port). Default: 9464 wherever there is a real store.
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(65535)
  METRICS_PORT?: number;

  // Address of the metrics listener; default HOST's.
  @IsOptional()
  @IsString()
  METRICS_HOST?: string;

  // Bearer token for /metrics (on the API port when METRICS_PORT is unset, else on the metrics listener).
  @IsOptional()
  @IsString()
  METRICS_TOKEN?: string;

  // Swagger UI and the spec at /docs; default on, off in production.
  @IsOptional()
  @IsBoolean()
  DOCS_ENABLED?: boolean;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';

  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: string = 'auto';

  @IsInt()
  @Min(1024)
  @Max(10 * 1024 * 1024)
  HTTP_BODY_LIMIT_BYTES: number = 102400;

  @IsInt()
  @Min(100)
  @Max(120000)
  HTTP_HEADERS_TIMEOUT_MS: number = 5000;

  @IsInt()
  @Min(100)
  @Max(120000)
  HTTP_REQUEST_TIMEOUT_MS: number = 8000;

  @IsInt()
  @Min(100)
  @Max(600000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5000;

  @IsInt()
  @Min(2)
  @Max(64)
  HTTP_JSON_MAX_DEPTH: number = 8;

  // Which peers may set X-Forwarded-*: false (none), the balancers' addresses/CIDRs, or true (anyone: only behind a balancer that overwrites them).
  @IsString()
  TRUST_PROXY: string = 'false';

  @IsInt()
  @Min(10)
  @Max(1000000)
  HTTP_JSON_MAX_VALUES: number = 1000;

  @IsInt()
  @Min(0)
  @Max(100000)
  LOG_REFUSED_REQUESTS_PER_SECOND: number = 10;

  @IsInt()
  @Min(0)
  @Max(120000)
  SHUTDOWN_GRACE_MS: number = 10000;

  @IsOptional()
  @Matches(/^mongodb(\+srv)?:\/\/\S+$/, { message: 'must be a mongodb:// or mongodb+srv:// URI' })
  MONGODB_URI?: string;

  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,63}$/, { message: 'must be 1-63 letters, digits, _ or -' })
  MONGODB_DB_NAME: string = 'orders';

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_CONNECT_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(300000)
  MONGODB_SOCKET_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_POOL_WAIT_TIMEOUT_MS: number = 2000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_PING_TIMEOUT_MS: number = 1000;

  @IsInt()
  @Min(100)
  @Max(120000)
  TRANSACTION_MAX_RETRY_MS: number = 5000;

  @IsOptional()
  @IsString()
  API_KEYS?: string;

  @IsString()
  @Matches(/^[a-z][a-z0-9-]{0,62}$/, { message: 'must be a lowercase slug' })
  SERVICE_NAME: string = 'orders-service';

  @IsInt()
  @Min(1)
  @Max(31536000)
  IDEMPOTENCY_TTL_SECONDS: number = 86400;

  @IsInt()
  @Min(1000)
  @Max(3600000)
  IDEMPOTENCY_LOCK_TIMEOUT_MS: number = 30000;

  // A duplicate in flight waits this long for the answer (never past the holder's lease), then 409.
  @IsInt()
  @Min(0)
  @Max(60000)
  IDEMPOTENCY_IN_FLIGHT_WAIT_MS: number = 5000;

  // Waiting duplicates per instance (memory, sockets); past it a duplicate gets 409 at once.
  @IsInt()
  @Min(0)
  @Max(100000)
  IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS: number = 1000;

  // After a transient failure (503) the attempt is left to its client's retry this long before the reaper abandons it.
  @IsInt()
  @Min(0)
  @Max(86400000)
  IDEMPOTENCY_RESUME_WINDOW_MS: number = 300000;

  // The duplicate guard on POST /v1/orders (same body under a new key within the window: 409 possible_duplicate). 0 = off.
  @IsInt()
  @Min(0)
  @Max(86400)
  DUPLICATE_GUARD_WINDOW_SECONDS: number = 0;

  // Tenants the duplicate guard applies to: `*` (every tenant) or a comma-separated list.
  @IsString()
  DUPLICATE_GUARD_TENANTS: string = '*';

  // Up to ten years: a tombstone is a few hundred bytes, and a late retry can come from a very old outbox.
  @IsInt()
  @Min(1)
  @Max(315360000)
  IDEMPOTENCY_TOMBSTONE_SECONDS: number = 2592000;

  @IsOptional()
  @IsString()
  IDEMPOTENCY_ENCRYPTION_KEY?: string;

  @IsOptional()
  @IsString()
  IDEMPOTENCY_DECRYPTION_KEYS?: string;

  /** HMAC key of every digest that could name a person (subject digests, erased fingerprints): 32 bytes, base64. */
  @IsOptional()
  @IsString()
  PRIVACY_DIGEST_KEY?: string;

  @IsInt()
  @Min(100)
  @Max(3600000)
  REAPER_INTERVAL_MS: number = 10000;

  @IsInt()
  @Min(1)
  @Max(1000)
  REAPER_BATCH_SIZE: number = 50;

  @IsInt()
  @Min(100)
  @Max(600000)
  REAPER_TIME_BUDGET_MS: number = 5000;

  @IsBoolean()
  REAPER_ENABLED: boolean = true;

  @IsInt()
  @Min(50)
  @Max(3600000)
  OUTBOX_RELAY_INTERVAL_MS: number = 1000;

  @IsInt()
  @Min(1)
  @Max(1000)
  OUTBOX_BATCH_SIZE: number = 100;

  @IsInt()
  @Min(100)
  @Max(600000)
  OUTBOX_PUBLISH_TIMEOUT_MS: number = 10000;

  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,63}$/, { message: 'must be 1-63 letters, digits, _ or -' })
  PAYMENT_SIMULATOR_DB_NAME: string = 'payment_simulator';

  @IsInt()
  @Min(0)
  @Max(60000)
  PAYMENT_SIMULATOR_LATENCY_MS: number = 0;

  @IsInt()
  @Min(1)
  @Max(3600)
  PAYMENT_RETRY_AFTER_SECONDS: number = 2;

  /** How long the simulated provider holds a manual-capture authorization (7 days, as card networks commonly allow). */
  @IsInt()
  @Min(1)
  @Max(31 * 24 * 3600)
  PAYMENT_AUTHORIZATION_TTL_SECONDS: number = 7 * 24 * 3600;

  /** The simulator settles a `processing` charge on its own after this long (0: only when told, as the tests do). */
  @IsInt()
  @Min(0)
  @Max(3600000)
  PAYMENT_SIMULATOR_ASYNC_SETTLE_MS: number = 0;

  // The sweep of lapsed manual-capture authorizations (void or mark expired); runs where the reaper runs. 0 = off.
  @IsInt()
  @Min(0)
  @Max(3600000)
  AUTHORIZATION_SWEEP_INTERVAL_MS: number = 60000;

  @IsInt()
  @Min(1)
  @Max(1000)
  AUTHORIZATION_SWEEP_BATCH_SIZE: number = 50;

  // Secrets that verify provider webhooks (Standard Webhooks `whsec_<base64>`), comma separated: the current one and any
  // still in rotation. Unset: the dev secret, only where the dev tenant is allowed.
  @IsOptional()
  @IsString()
  WEBHOOK_SECRETS?: string;

  // How far a webhook-timestamp may be from now; the library refuses past 5 minutes whatever this says.
  @IsInt()
  @Min(1)
  @Max(300)
  WEBHOOK_TOLERANCE_SECONDS: number = 300;

  @IsInt()
  @Min(256)
  @Max(1048576)
  WEBHOOK_BODY_LIMIT_BYTES: number = 65536;

  // Refused webhook deliveries one source (client IP, see TRUST_PROXY) may cause per minute before it is
  // refused on sight with 429, its body never read; valid deliveries never count. 0 = no limit.
  @IsInt()
  @Min(0)
  WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE: number = 60;

  // No order stays `processing` longer than this: past it the provider is asked by charge key (and a charge still
  // processing is canceled there), whether or not a webhook ever arrived.
  @IsInt()
  @Min(1000)
  @Max(604800000)
  PROCESSING_BOUND_MS: number = 900000;

  // A bank transfer the provider cannot cancel while processing: waited for this long (days) before it is alerted on.
  @IsInt()
  @Min(1000)
  @Max(2592000000)
  PROCESSING_BOUND_BANK_TRANSFER_MS: number = 432000000;

  // How often the processing reconciliation looks for orders past the bound.
  @IsInt()
  @Min(100)
  @Max(3600000)
  PROCESSING_RECONCILE_INTERVAL_MS: number = 30000;

  // The simulated provider's webhook deliveries: target URL (unset: no deliveries), then how a real provider misbehaves.
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http:// or https:// URL' })
  PAYMENT_SIMULATOR_WEBHOOK_URL?: string;

  // Secrets the simulator signs with (every one, one signature each); default WEBHOOK_SECRETS.
  @IsOptional()
  @IsString()
  PAYMENT_SIMULATOR_WEBHOOK_SECRETS?: string;

  @IsInt()
  @Min(0)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_DELAY_MS: number = 50;

  // Extra random delay per delivery, up to this: deliveries of different events overtake one another.
  @IsInt()
  @Min(0)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_JITTER_MS: number = 0;

  @IsNumber()
  @Min(0)
  @Max(1)
  PAYMENT_SIMULATOR_WEBHOOK_DUPLICATE_RATE: number = 0;

  @IsNumber()
  @Min(0)
  @Max(1)
  PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE: number = 0;

  @IsInt()
  @Min(1)
  @Max(100)
  PAYMENT_SIMULATOR_WEBHOOK_MAX_ATTEMPTS: number = 8;

  @IsInt()
  @Min(1)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_BACKOFF_MS: number = 200;

  @IsBoolean()
  FAULT_INJECTION: boolean = false;

  @IsOptional()
  @IsIn(FAULT_POINTS)
  FAULT_CRASH_AT?: string;

  @IsInt()
  @Min(0)
  @Max(100000)
  RATE_LIMIT_PER_KEY_PER_MINUTE: number = 60;

  @IsInt()
  @Min(0)
  @Max(1000000)
  RATE_LIMIT_PER_TENANT_PER_MINUTE: number = 6000;

  @IsBoolean()
  BENCH_DISABLE_IDEMPOTENCY: boolean = false;

  // Optional fast path (issue 16): unset = MongoDB only. Never the store of record.
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  // Prefix of every Redis key of this deployment; deployments sharing one Redis must differ here.
  @IsOptional()
  @Matches(/^[A-Za-z0-9_:.-]{1,64}$/, { message: 'must be 1-64 letters, digits, _ : . or -' })
  REDIS_NAMESPACE?: string;

  // Bound on one Redis call; past it the request asks MongoDB instead.
  @IsInt()
  @Min(1)
  @Max(5000)
  REDIS_COMMAND_TIMEOUT_MS: number = 25;

  // Share of failed Redis calls (in a rolling 10 s window) that opens the circuit.
  @IsInt()
  @Min(1)
  @Max(100)
  REDIS_BREAKER_ERROR_PERCENT: number = 50;

  // Calls in the window before the circuit may open at all.
  @IsInt()
  @Min(1)
  @Max(10000)
  REDIS_BREAKER_VOLUME_THRESHOLD: number = 10;

  // How long an open circuit skips Redis before one trial call (half-open).
  @IsInt()
  @Min(100)
  @Max(600000)
  REDIS_BREAKER_RESET_MS: number = 5000;
}

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigurationError';
  }
}

/** `auto`: pretty for a person at a terminal in development, JSON everywhere else (files, pipes, production). */
export function logFormat(setting: string, production: boolean, stdoutIsTty: boolean): 'json' | 'pretty' {
  if (setting === 'json' || setting === 'pretty') return setting;
  return stdoutIsTty && !production ? 'pretty' : 'json';
}

/**
 * Where FAULT_CRASH_AT may kill the process: after-claim / after-charge /
 * after-charged / before-response on a create; after-<op>-claim (the
 * operation's claim committed, the provider not called yet) and
 * after-<op>-provider (the provider acted, nothing recorded yet) on a
 * refund, capture or void.
 */
export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface AppSettings {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  logLevel: string;
  /** JSON lines for machines; coloured lines for a person at a terminal (auto: pretty on a TTY, never in production). */
  logFormat: 'json' | 'pretty';
  /** Refused (4xx) requests logged per second at most; the rest are counted, not written. */
  logRefusedPerSecond: number;
  shutdownGraceMs: number;
  serviceName: string;
  faultInjection: boolean;
  faultCrashAt?: FaultPoint;
  benchDisableIdempotency: boolean;
  /** Swagger UI and the OpenAPI document at /docs. */
  docsEnabled: boolean;
}

/**
 * Where /metrics is served: `api` on the API port (public only with the
 * embedded store or in tests, else behind `token`), or `port` on a listener
 * of its own (the default wherever there is a real store).
 */
export interface MetricsSettings {
  listener: 'api' | 'port';
  port?: number;
  host: string;
  token?: string;
}

/** The scrape port Prometheus exporters conventionally use for the metrics listener. */
export const DEFAULT_METRICS_PORT = 9464;

/** What one client may cost the HTTP layer before it is cut off or refused. */
export interface HttpSettings {
  bodyLimitBytes: number;
  /** Whole header block, counted from the first byte (or the connection) - 408 after. */
  headersTimeoutMs: number;
  /** Headers and body, i.e. everything the client sends - 408 after; never the handler's time. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** JSON bodies: nesting depth and number of values, checked before parsing and validation. */
  jsonMaxDepth: number;
  jsonMaxValues: number;
  /** Fastify's trustProxy: whose X-Forwarded-For/-Proto/-Host are believed (request.ip, protocol, host). */
  trustProxy: boolean | string;
}

export interface MongoSettings {
  uri?: string;
  dbName: string;
  serverSelectionTimeoutMs: number;
  /** TCP connect + handshake of a new connection. */
  connectTimeoutMs: number;
  /** Longest wait for the reply to one command on an open connection. */
  socketTimeoutMs: number;
  /** Longest wait for a free pooled connection. */
  poolWaitTimeoutMs: number;
  /** Bound on the readiness check's ping. */
  pingTimeoutMs: number;
  transactionMaxRetryMs: number;
}

export interface SecuritySettings {
  apiKeys: ApiKeyEntry[];
  usingDevApiKey: boolean;
  rateLimitPerKeyPerMinute: number;
  rateLimitPerTenantPerMinute: number;
}

/** What an API key may do: create and read orders, administer idempotency keys, erase customers. */
export const API_KEY_SCOPES = ['orders', 'admin', 'privacy'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export interface ApiKeyEntry {
  tenant: string;
  secret: string;
  /** Logged in audit lines instead of the secret: `<tenant>#<n>`, the tenant's n-th key in API_KEYS. */
  id: string;
  scopes: ApiKeyScope[];
}

export interface IdempotencySettings {
  ttlSeconds: number;
  lockTimeoutMs: number;
  inFlightWaitMs: number;
  /** How long a finished key's tombstone outlives its stored response (late retries). */
  tombstoneSeconds: number;
  inFlightMaxWaiters: number;
  /** How long a record released after a transient failure is left to its client before the reaper takes it. */
  resumeWindowMs: number;
  /** Key used to encrypt new stored responses. */
  encryptionKey: CipherKey;
  /** Every key that may decrypt (the current one first). */
  decryptionKeys: CipherKey[];
  usingDevEncryptionKey: boolean;
  /**
   * HMAC key of the digests kept of personal data (subject digests, the
   * fingerprints an erasure leaves, tombstones of erased requests): without
   * it a digest of a guessable id or body is no oracle. Must not change while
   * records and tombstones live (they would no longer be found).
   */
  digestKey: Buffer;
  usingDevDigestKey: boolean;
  /** The duplicate guard: null when off (DUPLICATE_GUARD_WINDOW_SECONDS=0, the default). */
  duplicateGuard: { windowSeconds: number; tenants: '*' | string[] } | null;
}

export interface CipherKey {
  id: string;
  key: Buffer;
  /** Other ids this key opens: "k1" (every bare key's id before ids were derived) or its derived id. */
  aliases?: string[];
}

export interface ReaperSettings {
  enabled: boolean;
  intervalMs: number;
  batchSize: number;
  timeBudgetMs: number;
}

export interface OutboxSettings {
  intervalMs: number;
  batchSize: number;
  /** A publish still running after this has failed (it is retried); a claimed event is held for twice as long. */
  publishTimeoutMs: number;
}

export interface PaymentsSettings {
  simulatorDbName: string;
  simulatorLatencyMs: number;
  retryAfterSeconds: number;
  /** The simulator's authorization lifetime (manual capture); a real provider sets its own. */
  authorizationTtlSeconds: number;
  /** The expiry sweep of lapsed authorizations (orders/payment-actions/authorization-expiry.sweep.ts); intervalMs 0 = off. */
  authorizationSweep: { intervalMs: number; batchSize: number };
  /** When the simulator settles an asynchronous charge by itself (0: never; settleProcessing does). */
  asyncSettleMs: number;
}

/** Provider webhooks (POST /v1/webhooks/payments) and the bound on `processing` orders. */
export interface WebhookSettings {
  /** Every secret that verifies (Standard Webhooks `whsec_<base64>`): the current one and those still in rotation; none = every delivery refused. */
  secrets: string[];
  usingDevSecret: boolean;
  toleranceSeconds: number;
  bodyLimitBytes: number;
  refusalsPerSourcePerMinute: number;
  processingBoundMs: number;
  /** Per method, for a charge the provider cannot cancel while processing (AsyncChargeResult `still_processing`). */
  processingBoundBankTransferMs: number;
  reconcileIntervalMs: number;
}

/** How the simulated provider delivers its webhooks: at least once, late, twice, out of order, or never. */
export interface WebhookDeliverySettings {
  /** Unset: the simulator sends nothing. */
  url?: string;
  secrets: string[];
  delayMs: number;
  jitterMs: number;
  duplicateRate: number;
  lossRate: number;
  maxAttempts: number;
  backoffMs: number;
}

/** The optional Redis fast path in front of the idempotency records (never their store of record). */
export interface RedisSettings {
  /** Unset: the fast path is off and every look-up goes to MongoDB. */
  url?: string;
  /** Prefix of every key (REDIS_NAMESPACE; default `idem:{MONGODB_DB_NAME}`). */
  namespace: string;
  commandTimeoutMs: number;
  breakerErrorPercent: number;
  breakerVolumeThreshold: number;
  breakerResetMs: number;
}

export interface Configuration {
  app: AppSettings;
  http: HttpSettings;
  mongo: MongoSettings;
  security: SecuritySettings;
  idempotency: IdempotencySettings;
  reaper: ReaperSettings;
  outbox: OutboxSettings;
  payments: PaymentsSettings;
  redis: RedisSettings;
  metrics: MetricsSettings;
  webhooks: WebhookSettings;
  webhookDelivery: WebhookDeliverySettings;
}

/** Documented in README and .env.example; only with the embedded store or NODE_ENV=test, refused with a real store even if set. */
export const DEV_TENANT = 'dev';
export const DEV_API_SECRET = 'dev-secret-change-me';
const DEV_ENCRYPTION_KEY = Buffer.alloc(32, 'dev-only-idempotency-key');
const DEV_DIGEST_KEY = Buffer.alloc(32, 'dev-only-privacy-digest-key');
/** Documented in README: verifies (and the simulator signs) webhooks where the dev tenant is allowed. */
export const DEV_WEBHOOK_SECRET = `whsec_${Buffer.alloc(24, 'dev-only-webhook-secret').toString('base64')}`;

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * A refused value as the error may show it: never a secret or key (their
 * length only), never the credentials of a URI (user and password).
 */
function shown(name: string, value: string | undefined): string {
  if (value === undefined) return 'nothing';
  if (/KEY|SECRET|TOKEN|PASSWORD/.test(name)) return `${value.length} characters, not shown`;
  if (/_(URI|URL)$/.test(name) && value.includes('@')) {
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(value)?.[0] ?? '';
    return JSON.stringify(`${scheme}***${value.slice(value.lastIndexOf('@'))}`);
  }
  return JSON.stringify(value);
}

const BOOLEAN_STRINGS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false };

/**
 * The URI of the embedded store main.ts started because MONGODB_URI was
 * unset. Kept here, not put into the environment: with MONGODB_URI set the
 * dev defaults would be refused, and an environment variable saying "this
 * URI is embedded" could be set by anyone for a real database.
 */
let embeddedStoreUri: string | undefined;

export function useEmbeddedStore(uri: string): void {
  embeddedStoreUri = uri;
}

/** Reads and validates the environment; throws ConfigurationError naming every bad variable. */
export function loadConfiguration(raw: NodeJS.ProcessEnv): Configuration {
  const problems: string[] = [];
  const booleans = coerceBooleans(raw, problems);
  const env = plainToInstance(
    EnvironmentVariables,
    { ...stripEmpty(raw), ...booleans },
    {
      enableImplicitConversion: true,
      excludeExtraneousValues: false,
    },
  );
  const invalid = new Set<string>();
  for (const error of validateSync(env, { skipMissingProperties: false })) {
    invalid.add(error.property);
    const constraints = Object.values(error.constraints ?? {}).join('; ');
    problems.push(`${error.property}: ${constraints} (got ${shown(error.property, raw[error.property])})`);
  }
  const production = env.NODE_ENV === 'production';
  // The dev tenant, the dev cipher key and the test switches are for the embedded store (a laptop) or tests,
  // never for a real database: NODE_ENV defaults to development, so it cannot be what guards them.
  const devAllowed = !production && (!env.MONGODB_URI || invalid.has('MONGODB_URI') || env.NODE_ENV === 'test');
  const realStore = production ? 'NODE_ENV=production' : 'MONGODB_URI is set (outside NODE_ENV=test)';
  if (production && !env.MONGODB_URI) problems.push('MONGODB_URI: required when NODE_ENV=production');
  if (!devAllowed && env.FAULT_INJECTION) problems.push(`FAULT_INJECTION: refused when ${realStore}`);
  if (!devAllowed && env.BENCH_DISABLE_IDEMPOTENCY) problems.push(`BENCH_DISABLE_IDEMPOTENCY: refused when ${realStore}`);
  if (env.FAULT_CRASH_AT && !env.FAULT_INJECTION) problems.push('FAULT_CRASH_AT: needs FAULT_INJECTION=true');
  checkRelations(env, problems);

  const apiKeys = parseApiKeys(env.API_KEYS, devAllowed ? undefined : realStore, problems);
  const cipherKeys = parseCipherKeys(env, devAllowed ? undefined : realStore, problems);
  const digestKey = parseDigestKey(env.PRIVACY_DIGEST_KEY, devAllowed ? undefined : realStore, problems);
  if (production && env.REDIS_URL && !redisHasAuth(env.REDIS_URL)) {
    problems.push('REDIS_URL: needs a password (redis://user:password@host) when NODE_ENV=production: Redis must be private');
  }
  const host = env.HOST ?? (apiKeys.dev ? '127.0.0.1' : '0.0.0.0');
  if (apiKeys.dev && !LOOPBACK.has(host)) {
    problems.push(
      'HOST: the dev tenant (API_KEYS unset) listens on loopback only (127.0.0.1, ::1, localhost); set API_KEYS to listen on HOST',
    );
  }
  const metrics = metricsSettings(env, devAllowed, host, problems);
  const duplicateGuard = duplicateGuardConfig(env.DUPLICATE_GUARD_WINDOW_SECONDS, env.DUPLICATE_GUARD_TENANTS, problems);
  const webhookSecrets = parseWebhookSecrets('WEBHOOK_SECRETS', env.WEBHOOK_SECRETS, devAllowed ? undefined : realStore, problems);
  const deliverySecrets = env.PAYMENT_SIMULATOR_WEBHOOK_SECRETS
    ? parseWebhookSecrets('PAYMENT_SIMULATOR_WEBHOOK_SECRETS', env.PAYMENT_SIMULATOR_WEBHOOK_SECRETS, undefined, problems).secrets
    : webhookSecrets.secrets;
  if (problems.length > 0) throw new ConfigurationError(problems);

  return {
    app: {
      env: env.NODE_ENV as AppSettings['env'],
      port: env.PORT,
      host,
      logLevel: env.LOG_LEVEL,
      logFormat: logFormat(env.LOG_FORMAT, production, process.stdout.isTTY === true),
      logRefusedPerSecond: env.LOG_REFUSED_REQUESTS_PER_SECOND,
      shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
      serviceName: env.SERVICE_NAME,
      faultInjection: env.FAULT_INJECTION,
      faultCrashAt: env.FAULT_CRASH_AT as FaultPoint | undefined,
      benchDisableIdempotency: env.BENCH_DISABLE_IDEMPOTENCY,
      // Off wherever the dev defaults are (a real store, whatever NODE_ENV says): the document maps every route (SEC4-07).
      docsEnabled: env.DOCS_ENABLED ?? devAllowed,
    },
    http: {
      bodyLimitBytes: env.HTTP_BODY_LIMIT_BYTES,
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      jsonMaxDepth: env.HTTP_JSON_MAX_DEPTH,
      jsonMaxValues: env.HTTP_JSON_MAX_VALUES,
      trustProxy: trustProxy(env.TRUST_PROXY),
    },
    mongo: {
      uri: env.MONGODB_URI ?? embeddedStoreUri,
      dbName: env.MONGODB_DB_NAME,
      serverSelectionTimeoutMs: env.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
      connectTimeoutMs: env.MONGODB_CONNECT_TIMEOUT_MS,
      socketTimeoutMs: env.MONGODB_SOCKET_TIMEOUT_MS,
      poolWaitTimeoutMs: env.MONGODB_POOL_WAIT_TIMEOUT_MS,
      pingTimeoutMs: env.MONGODB_PING_TIMEOUT_MS,
      transactionMaxRetryMs: env.TRANSACTION_MAX_RETRY_MS,
    },
    security: {
      apiKeys: apiKeys.entries,
      usingDevApiKey: apiKeys.dev,
      rateLimitPerKeyPerMinute: env.RATE_LIMIT_PER_KEY_PER_MINUTE,
      rateLimitPerTenantPerMinute: env.RATE_LIMIT_PER_TENANT_PER_MINUTE,
    },
    idempotency: {
      ttlSeconds: env.IDEMPOTENCY_TTL_SECONDS,
      lockTimeoutMs: env.IDEMPOTENCY_LOCK_TIMEOUT_MS,
      inFlightWaitMs: env.IDEMPOTENCY_IN_FLIGHT_WAIT_MS,
      tombstoneSeconds: env.IDEMPOTENCY_TOMBSTONE_SECONDS,
      inFlightMaxWaiters: env.IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS,
      resumeWindowMs: env.IDEMPOTENCY_RESUME_WINDOW_MS,
      encryptionKey: cipherKeys.current,
      decryptionKeys: cipherKeys.all,
      usingDevEncryptionKey: cipherKeys.dev,
      digestKey: digestKey.key,
      usingDevDigestKey: digestKey.dev,
      duplicateGuard,
    },
    reaper: {
      enabled: env.REAPER_ENABLED,
      intervalMs: env.REAPER_INTERVAL_MS,
      batchSize: env.REAPER_BATCH_SIZE,
      timeBudgetMs: env.REAPER_TIME_BUDGET_MS,
    },
    outbox: { intervalMs: env.OUTBOX_RELAY_INTERVAL_MS, batchSize: env.OUTBOX_BATCH_SIZE, publishTimeoutMs: env.OUTBOX_PUBLISH_TIMEOUT_MS },
    payments: {
      simulatorDbName: env.PAYMENT_SIMULATOR_DB_NAME,
      simulatorLatencyMs: env.PAYMENT_SIMULATOR_LATENCY_MS,
      retryAfterSeconds: env.PAYMENT_RETRY_AFTER_SECONDS,
      authorizationTtlSeconds: env.PAYMENT_AUTHORIZATION_TTL_SECONDS,
      asyncSettleMs: env.PAYMENT_SIMULATOR_ASYNC_SETTLE_MS,
      authorizationSweep: { intervalMs: env.AUTHORIZATION_SWEEP_INTERVAL_MS, batchSize: env.AUTHORIZATION_SWEEP_BATCH_SIZE },
    },
    redis: {
      url: env.REDIS_URL,
      namespace: env.REDIS_NAMESPACE ?? `idem:${env.MONGODB_DB_NAME}`,
      commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS,
      breakerErrorPercent: env.REDIS_BREAKER_ERROR_PERCENT,
      breakerVolumeThreshold: env.REDIS_BREAKER_VOLUME_THRESHOLD,
      breakerResetMs: env.REDIS_BREAKER_RESET_MS,
    },
    metrics,
    webhooks: {
      secrets: webhookSecrets.secrets,
      usingDevSecret: webhookSecrets.dev,
      toleranceSeconds: env.WEBHOOK_TOLERANCE_SECONDS,
      bodyLimitBytes: env.WEBHOOK_BODY_LIMIT_BYTES,
      refusalsPerSourcePerMinute: env.WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE,
      processingBoundMs: env.PROCESSING_BOUND_MS,
      processingBoundBankTransferMs: env.PROCESSING_BOUND_BANK_TRANSFER_MS,
      reconcileIntervalMs: env.PROCESSING_RECONCILE_INTERVAL_MS,
    },
    webhookDelivery: {
      url: env.PAYMENT_SIMULATOR_WEBHOOK_URL,
      secrets: deliverySecrets,
      delayMs: env.PAYMENT_SIMULATOR_WEBHOOK_DELAY_MS,
      jitterMs: env.PAYMENT_SIMULATOR_WEBHOOK_JITTER_MS,
      duplicateRate: env.PAYMENT_SIMULATOR_WEBHOOK_DUPLICATE_RATE,
      lossRate: env.PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE,
      maxAttempts: env.PAYMENT_SIMULATOR_WEBHOOK_MAX_ATTEMPTS,
      backoffMs: env.PAYMENT_SIMULATOR_WEBHOOK_BACKOFF_MS,
    },
  };
}

/**
 * WEBHOOK_SECRETS: comma-separated Standard Webhooks secrets (`whsec_` + base64 of 24 to 64 bytes), the newest first.
 * Unset: the dev secret where dev defaults are allowed (`realStore` undefined); with a real store none - the
 * webhook endpoint then refuses every delivery (401) until secrets are set, and deployments without
 * asynchronous payments need not configure any.
 */
function parseWebhookSecrets(name: string, value: string | undefined, realStore: string | undefined, problems: string[]) {
  if (!value) return realStore ? { secrets: [], dev: false } : { secrets: [DEV_WEBHOOK_SECRET], dev: true };
  const secrets = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  for (const secret of secrets) {
    const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : '';
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length < 24 || bytes.length > 64 || bytes.toString('base64') !== encoded) {
      problems.push(`${name}: each secret must be whsec_ followed by 24 to 64 bytes in base64 (whsec_$(openssl rand -base64 32))`);
      return { secrets: [DEV_WEBHOOK_SECRET], dev: true };
    }
    if (realStore && secret === DEV_WEBHOOK_SECRET) {
      problems.push(`${name}: the published dev secret is refused when ${realStore}`);
      return { secrets: [DEV_WEBHOOK_SECRET], dev: true };
    }
  }
  if (secrets.length === 0) problems.push(`${name}: no secret found`);
  return { secrets, dev: false };
}

/** Metrics are public on the API port only where dev defaults are (a laptop, a test); elsewhere a port of their own or a token. */
function metricsSettings(env: EnvironmentVariables, devAllowed: boolean, host: string, problems: string[]): MetricsSettings {
  if (env.METRICS_TOKEN !== undefined && env.METRICS_TOKEN.length < 32) {
    problems.push(`METRICS_TOKEN: must be at least 32 characters (got ${shown('METRICS_TOKEN', env.METRICS_TOKEN)})`);
  }
  const separate = env.METRICS_PORT !== undefined || (!devAllowed && env.METRICS_TOKEN === undefined);
  if (separate && env.METRICS_PORT === env.PORT) problems.push('METRICS_PORT: must differ from PORT');
  return separate
    ? {
        listener: 'port',
        port: env.METRICS_PORT ?? DEFAULT_METRICS_PORT,
        // Loopback unless said otherwise (a container names its scraper's network): never every interface by default (SEC4-07).
        host: env.METRICS_HOST ?? (devAllowed ? host : '127.0.0.1'),
        token: env.METRICS_TOKEN,
      }
    : { listener: 'api', host, token: env.METRICS_TOKEN };
}

function trustProxy(value: string): boolean | string {
  return value === 'false' || value === 'true' ? value === 'true' : value;
}

/** Limits that only make sense together. */
function checkRelations(env: EnvironmentVariables, problems: string[]): void {
  const proxies = env.TRUST_PROXY === 'false' || env.TRUST_PROXY === 'true' ? [] : env.TRUST_PROXY.split(',');
  const isAddressOrCidr = (entry: string) => {
    const [address, prefix, extra] = entry.trim().split('/');
    const family = isIP(address);
    return (
      family > 0 &&
      extra === undefined &&
      (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)))
    );
  };
  if (proxies.some((entry) => !isAddressOrCidr(entry))) {
    problems.push(
      `TRUST_PROXY: must be false, true, or comma-separated addresses/CIDRs of the balancers (got ${shown('TRUST_PROXY', env.TRUST_PROXY)})`,
    );
  }
  if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  if (env.RATE_LIMIT_PER_KEY_PER_MINUTE > 0 && env.RATE_LIMIT_PER_TENANT_PER_MINUTE === 0) {
    problems.push(
      'RATE_LIMIT_PER_KEY_PER_MINUTE: needs RATE_LIMIT_PER_TENANT_PER_MINUTE > 0 (the tenant limit bounds how many keys are tracked)',
    );
  }
}

/** An empty variable (`PORT=`) means "use the default", as in most twelve-factor apps. */
function stripEmpty(raw: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(raw).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));
}

/** Implicit conversion would read "false" as true (a non-empty string), so booleans are parsed here. */
function coerceBooleans(raw: NodeJS.ProcessEnv, problems: string[]): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const name of ['REAPER_ENABLED', 'FAULT_INJECTION', 'BENCH_DISABLE_IDEMPOTENCY', 'DOCS_ENABLED']) {
    const value = raw[name];
    if (value === undefined || value === '') continue;
    const parsed = BOOLEAN_STRINGS[value.toLowerCase()];
    if (parsed === undefined) problems.push(`${name}: must be true or false (got ${JSON.stringify(value)})`);
    else out[name] = parsed;
  }
  return out;
}

/**
 * `tenant:secret` (scope `orders`) or `tenant:secret:scope+scope`: with two or
 * more colons, the part after the last one is the scope list, so a secret that
 * contains a colon must name its scopes. `realStore`: why the dev defaults are
 * refused here (undefined: they are allowed).
 */
function parseApiKeys(value: string | undefined, realStore: string | undefined, problems: string[]) {
  if (!value) {
    if (realStore) problems.push(`API_KEYS: required when ${realStore}`);
    return { entries: [{ tenant: DEV_TENANT, secret: DEV_API_SECRET, id: `${DEV_TENANT}#1`, scopes: [...API_KEY_SCOPES] }], dev: true };
  }
  const entries: ApiKeyEntry[] = [];
  for (const pair of value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const separator = pair.indexOf(':');
    const tenant = pair.slice(0, separator);
    const rest = pair.slice(separator + 1);
    const scopeSeparator = rest.lastIndexOf(':');
    const secret = scopeSeparator >= 0 ? rest.slice(0, scopeSeparator) : rest;
    const scopes = scopeSeparator >= 0 ? rest.slice(scopeSeparator + 1).split('+') : ['orders'];
    if (separator < 1 || !/^[A-Za-z0-9_-]{1,64}$/.test(tenant)) {
      problems.push('API_KEYS: each entry must be tenant:secret[:scopes] with a tenant of 1-64 letters, digits, _ or -');
    } else if (secret.length < 16) {
      problems.push(`API_KEYS: the secret of tenant "${tenant}" must be at least 16 characters`);
    } else if (!scopes.every((scope) => (API_KEY_SCOPES as readonly string[]).includes(scope))) {
      problems.push(
        `API_KEYS: a key of tenant "${tenant}" names an unknown scope; scopes are ${API_KEY_SCOPES.join(', ')}, joined by + (tenant:secret:orders+admin)`,
      );
    } else if (realStore && secret === DEV_API_SECRET) {
      problems.push(`API_KEYS: the published dev secret is refused when ${realStore} (tenant "${tenant}")`);
    } else if (entries.some((entry) => entry.secret === secret)) {
      // The registry would take the first match: the second tenant's clients would act as the first tenant.
      const first = entries.find((entry) => entry.secret === secret)!.tenant;
      problems.push(`API_KEYS: tenants "${first}" and "${tenant}" have the same secret; every secret must be unique`);
    } else {
      const n = entries.filter((entry) => entry.tenant === tenant).length + 1;
      entries.push({ tenant, secret, id: `${tenant}#${n}`, scopes: [...new Set(scopes)] as ApiKeyScope[] });
    }
  }
  if (entries.length === 0 && problems.length === 0) problems.push('API_KEYS: no tenant:secret pair found');
  return { entries, dev: false };
}

/**
 * IDEMPOTENCY_ENCRYPTION_KEY is `id:base64` or a bare `base64`;
 * IDEMPOTENCY_DECRYPTION_KEYS lists retired keys (`id:base64` or `base64`,
 * comma separated) that may still decrypt records written before a rotation.
 * A bare key's id is derived from its bytes (`keyId`), so two different keys
 * never share an id; ids must be unique. A bare key also opens bodies sealed
 * under "k1" (the id earlier releases gave every bare key), and a named key
 * bodies sealed under its derived id (it was bare before it was retired).
 */
function parseCipherKeys(
  env: EnvironmentVariables,
  realStore: string | undefined,
  problems: string[],
): { current: CipherKey; all: CipherKey[]; dev: boolean } {
  const dev = { current: { id: 'dev', key: DEV_ENCRYPTION_KEY }, all: [{ id: 'dev', key: DEV_ENCRYPTION_KEY }], dev: true };
  if (!env.IDEMPOTENCY_ENCRYPTION_KEY) {
    if (realStore) problems.push(`IDEMPOTENCY_ENCRYPTION_KEY: required when ${realStore}`);
    return dev;
  }
  const current = parseCipherKey('IDEMPOTENCY_ENCRYPTION_KEY', env.IDEMPOTENCY_ENCRYPTION_KEY, problems);
  const retired = (env.IDEMPOTENCY_DECRYPTION_KEYS ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => parseCipherKey('IDEMPOTENCY_DECRYPTION_KEYS', part, problems));
  if (!current || retired.some((key) => !key)) return dev;
  const all = [current, ...(retired as CipherKey[])];
  if (realStore && all.some((key) => key.key.equals(DEV_ENCRYPTION_KEY))) {
    problems.push(`IDEMPOTENCY_ENCRYPTION_KEY/IDEMPOTENCY_DECRYPTION_KEYS: the published dev key is refused when ${realStore}`);
    return dev;
  }
  const ids = all.map((key) => key.id);
  const repeated = [...new Set(ids.filter((id, index) => ids.indexOf(id) !== index))];
  if (repeated.length > 0) {
    problems.push(
      `IDEMPOTENCY_ENCRYPTION_KEY/IDEMPOTENCY_DECRYPTION_KEYS: key ids must be unique (repeated: ${repeated.join(', ')}); give a new key a new id, or leave the id out and it is derived from the key`,
    );
    return dev;
  }
  return { current, all, dev: false };
}

/** The id of a key given without one: a digest of the key (public, 48 bits: names the key, reveals nothing of it). */
export function keyId(key: Buffer): string {
  return `h${createHash('sha256').update('idempotency-cipher-key-id\n').update(key).digest('hex').slice(0, 12)}`;
}

function parseCipherKey(name: string, value: string, problems: string[]): CipherKey | undefined {
  const separator = value.indexOf(':');
  const explicitId = separator > 0 ? value.slice(0, separator) : undefined;
  const encoded = separator > 0 ? value.slice(separator + 1) : value;
  const key = Buffer.from(encoded, 'base64');
  if (explicitId !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(explicitId)) {
    problems.push(`${name}: a key id (id:base64) must be 1-32 letters, digits, _ or -`);
    return undefined;
  }
  if (key.length !== 32 || key.toString('base64') !== encoded) {
    problems.push(`${name}: ${explicitId ? `key "${explicitId}"` : 'each key'} must be 32 bytes in base64 (openssl rand -base64 32)`);
    return undefined;
  }
  // Either way the key also opens what it sealed under its other possible name, however a rotation lists it.
  return explicitId ? { id: explicitId, key, aliases: [keyId(key)] } : { id: keyId(key), key, aliases: ['k1'] };
}

/** PRIVACY_DIGEST_KEY: 32 bytes or more in base64; the dev key only where the dev cipher key is allowed too. */
function parseDigestKey(value: string | undefined, realStore: string | undefined, problems: string[]): { key: Buffer; dev: boolean } {
  if (!value) {
    if (realStore) problems.push(`PRIVACY_DIGEST_KEY: required when ${realStore}`);
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  const key = Buffer.from(value, 'base64');
  if (key.length < 32 || key.toString('base64') !== value) {
    problems.push('PRIVACY_DIGEST_KEY: must be at least 32 bytes in base64 (openssl rand -base64 32)');
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  if (realStore && key.equals(DEV_DIGEST_KEY)) {
    problems.push(`PRIVACY_DIGEST_KEY: the published dev key is refused when ${realStore}`);
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  return { key, dev: false };
}

/** Whether a Redis URL carries credentials (AUTH / ACL user); an unparsable URL is left to the client to refuse. */
function redisHasAuth(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}

/** DUPLICATE_GUARD_WINDOW_SECONDS (0 = off) and DUPLICATE_GUARD_TENANTS (`*` or tenant,tenant). */
function duplicateGuardConfig(
  windowSeconds: number,
  tenants: string,
  problems: string[],
): { windowSeconds: number; tenants: '*' | string[] } | null {
  const list = tenants.trim() === '*' ? '*' : tenants.split(',').map((tenant) => tenant.trim());
  if (list !== '*' && list.some((tenant) => !/^[A-Za-z0-9_-]{1,64}$/.test(tenant)))
    problems.push('DUPLICATE_GUARD_TENANTS: `*` or a comma-separated list of tenants (1-64 letters, digits, _ or -)');
  return windowSeconds > 0 ? { windowSeconds, tenants: list } : null;
}
