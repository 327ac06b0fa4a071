import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import type { Db } from 'mongodb';
import { Redis } from 'ioredis';
import request from 'supertest';
import { AppModule } from '../../src/app.module.js';
import { configureApp, createAdapter, NEST_APP_OPTIONS } from '../../src/app.setup.js';
import { loadConfiguration } from '../../src/config/configuration.js';

export const API_KEYS = {
  acme: 'acme-secret-0123456789',
  globex: 'globex-secret-0123456789',
};

export const ALL_SCOPES = 'orders+admin+privacy';

export interface TestApp {
  app: NestFastifyApplication;
  http: () => ReturnType<typeof request>;
  db: Db;
  simulatorDb: Db;
  /** A client of the app's Redis when it runs with the fast path (REDIS_URL), else null. */
  redis: Redis | null;
  /** Empties the app's keys in Redis (fast path on); a no-op without it. */
  resetCache(): Promise<void>;
  /** Empties every collection of this file's databases (the emulator has no dropDatabase). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/*
 * The emulator behind the serializing proxy runs one transaction at a time, so
 * a request queued behind a burst waits for the lock on its pool connection
 * (and the pool opens at most two connections at once). A real replica set
 * never makes it wait there. On a loaded machine that queue outlasted the
 * production bounds (3 s to answer, 2 s for a pooled connection): CI's gate
 * answered 9 of the Redis burst's 50 identical requests with 503
 * store_unavailable (MongoNetworkTimeoutError), and 24 CPU hogs here do the
 * same. In-process apps on the emulator wait 15 s instead; a test may set its
 * own. A frozen store is tested on a service process with the production
 * bounds (test/process/store-freeze*.e2e-spec.ts).
 */
const EMULATOR_QUEUE_BOUNDS: Record<string, string> =
  process.env.TEST_MONGO_BACKEND === 'emulator' ? { MONGODB_SOCKET_TIMEOUT_MS: '15000', MONGODB_POOL_WAIT_TIMEOUT_MS: '15000' } : {};

type ModuleImport = NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>[number];

export interface TestAppOptions {
  /** Unique per test file; must contain "test". */
  dbName: string;
  env?: Record<string, string>;
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** Extra modules booted beside AppModule (test-only routes; never a fake production route). */
  imports?: ModuleImport[];
  /** Keep what the databases hold (a restart over the same data); default is to empty them. */
  keepData?: boolean;
}

/** Boots the real AppModule through the production pipeline (configureApp) on the run's replica set. */
export async function startApp(options: TestAppOptions): Promise<TestApp> {
  if (!options.dbName.includes('test')) throw new Error('Test databases must contain "test" in their name');
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    MONGODB_DB_NAME: options.dbName,
    PAYMENT_SIMULATOR_DB_NAME: `${options.dbName}_psp`,
    // Every scope: the test files exercise erasure and key admin with the same keys (scopes: test/process/security-defaults).
    API_KEYS: Object.entries(API_KEYS)
      .map(([tenant, secret]) => `${tenant}:${secret}:${ALL_SCOPES}`)
      .join(','),
    REAPER_ENABLED: 'false',
    OUTBOX_RELAY_INTERVAL_MS: '3600000',
    // Rate limits get their own test; elsewhere they would only add noise.
    RATE_LIMIT_PER_KEY_PER_MINUTE: '0',
    RATE_LIMIT_PER_TENANT_PER_MINUTE: '0',
    ...EMULATOR_QUEUE_BOUNDS,
    ...options.env,
  };
  const saved = withEnv(env);
  let app: NestFastifyApplication;
  try {
    let builder = Test.createTestingModule({ imports: [AppModule, ...(options.imports ?? [])] });
    if (options.override) builder = options.override(builder);
    const moduleRef = await builder.compile();
    const adapter = createAdapter(loadConfiguration(process.env).http);
    app = moduleRef.createNestApplication<NestFastifyApplication>(adapter, { ...NEST_APP_OPTIONS, logger: false });
    configureApp(app);
    try {
      await app.init();
      await app.getHttpAdapter().getInstance().ready();
    } catch (error) {
      // A boot that fails (a test of a refused configuration) must not leave its connections open behind it.
      await app.close().catch(() => undefined);
      throw error;
    }
  } finally {
    restoreEnv(saved);
  }
  const connection = app.get<Connection>(getConnectionToken());
  const db = connection.db as unknown as Db;
  const simulatorDb = connection.getClient().db(env.PAYMENT_SIMULATOR_DB_NAME);
  // The fast path mirrors this database: emptied with it, or a cached answer would outlive its record.
  const redis = env.REDIS_URL ? new Redis(env.REDIS_URL, { maxRetriesPerRequest: 1 }) : null;
  const resetCache = async () => {
    const keys = redis ? await redis.keys(`idem:${options.dbName}:*`) : [];
    if (keys.length > 0) await redis!.del(...keys);
  };
  const reset = async () => {
    await resetCache();
    for (const name of [
      'idempotency_records',
      'idempotency_subjects',
      'idempotency_tombstones',
      'idempotency_duplicate_guard',
      'orders',
      'payments',
      'ledger_entries',
      'outbox_events',
      'outbox_sequences',
      'erasures',
      'refunds',
    ]) {
      await db.collection(name).deleteMany({});
    }
    await simulatorDb.collection('charges').deleteMany({});
    await simulatorDb.collection('operations').deleteMany({});
  };
  if (!options.keepData) await reset();
  return {
    app,
    http: () => request(app.getHttpServer()),
    db,
    simulatorDb,
    redis,
    resetCache,
    reset,
    close: async () => {
      redis?.disconnect();
      await app.close();
    },
  };
}

function withEnv(env: Record<string, string>): Record<string, string | undefined> {
  const saved: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  return saved;
}

function restoreEnv(saved: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

export const auth = (tenant: keyof typeof API_KEYS = 'acme') => ({ Authorization: `Bearer ${API_KEYS[tenant]}` });

export { orderBody } from './fixtures.js';
