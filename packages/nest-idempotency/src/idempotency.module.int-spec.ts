import { DEFAULT_PROBLEM_TYPE_BASE_URL, problem, setProblemTypeBaseUrl } from './problem.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Global, Injectable, Module } from '@nestjs/common';
import { startModuleApp, TEST_OPTIONS, type ModuleApp } from '../test/support/module-app.js';
import { IdempotencyClock, IdempotencyMetrics, NoopIdempotencyMetrics } from './ports.js';
import { IdempotencyService } from './protocol/idempotency.service.js';
import { fingerprintRequest } from './protocol/fingerprint.js';
import { IdempotencyAttempts } from './protocol/attempts.js';
import { TransactionRunner } from './store/transaction-runner.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from './options.js';
import { IdempotencyModule } from './idempotency.module.js';

const FIXED = new Date('2030-01-02T03:04:05.000Z');

/** The app's own clock (a token the package does not know), aliased through `ports.clock`. */
abstract class AppClock {
  abstract now(): Date;
}

/** A port's provider must be visible to the package: from a global module (as here) or one in forRootAsync's `imports`. */
@Global()
@Module({ providers: [{ provide: AppClock, useValue: { now: () => new Date(FIXED) } }], exports: [AppClock] })
class AppClockModule {}

@Injectable()
class FeatureA {
  constructor(readonly service: IdempotencyService) {}
}

@Injectable()
class FeatureB {
  constructor(readonly service: IdempotencyService) {}
}

@Module({ providers: [FeatureA], exports: [FeatureA] })
class ModuleA {}

@Module({ providers: [FeatureB], exports: [FeatureB] })
class ModuleB {}

describe('IdempotencyModule wiring', () => {
  let t: ModuleApp;

  beforeAll(async () => {
    t = await startModuleApp({
      dbName: 'test_module_wiring',
      imports: [AppClockModule, ModuleA, ModuleB],
      extras: { ports: { clock: AppClock } },
    });
  });
  afterAll(async () => t?.close());

  it('is registered once and global: two feature modules get one IdempotencyService (one set of waiters, one reaper)', () => {
    expect(t.app.get(FeatureA).service).toBe(t.app.get(FeatureB).service);
  });

  it("uses the clock the app maps in ports.clock, never a default of its own (the record's times are the app clock's)", async () => {
    expect(t.app.get(IdempotencyClock).now()).toEqual(FIXED);
    const service = t.app.get(IdempotencyService);
    const attempts = t.app.get(IdempotencyAttempts);
    const transactions = t.app.get(TransactionRunner);
    const response = { status: 201, headers: {}, body: '{}' };
    await service.execute(
      {
        receivedAt: FIXED,
        tenant: 'acme',
        operation: 'widgets.create',
        clientKey: 'clock-1',
        schemaVersion: 1,
        ttlSeconds: 60,
        fingerprint: fingerprintRequest('POST', '/widgets', {}),
      },
      {
        begin: async () => undefined,
        resume: (lease) => transactions.run((session) => attempts.complete(session, lease, 'done', response).then(() => response)),
      },
    );
    const record = await t.db.collection('idempotency_records').findOne({ clientKey: 'clock-1' });
    expect(record!.createdAt).toEqual(FIXED);
    expect(record!.expiresAt).toEqual(new Date(FIXED.getTime() + 60_000));
  });

  it('defaults the metrics port to counting nothing', () => {
    expect(t.app.get(IdempotencyMetrics)).toBeInstanceOf(NoopIdempotencyMetrics);
  });

  it('writes problem type URIs under the problemTypeBaseUrl it was given', async () => {
    const other = await startModuleApp({
      dbName: 'test_module_wiring_types',
      options: { problemTypeBaseUrl: 'https://docs.acme.dev/problems/' },
    });
    try {
      expect(problem(409, 'idempotency_key_in_use', 'x').type).toBe('https://docs.acme.dev/problems/idempotency-key-in-use');
    } finally {
      await other.close();
      setProblemTypeBaseUrl(DEFAULT_PROBLEM_TYPE_BASE_URL);
    }
  });

  it('forRootAsync builds the options from injected providers, through the same validation', async () => {
    const asyncApp = await startModuleApp({
      dbName: 'test_module_wiring_async',
      imports: [AppClockModule],
      idempotencyModule: IdempotencyModule.forRootAsync({
        ports: { clock: AppClock },
        inject: [AppClock],
        useFactory: (clock: AppClock) => ({ ...TEST_OPTIONS, service: `widgets-${clock.now().getUTCFullYear()}`, ttlSeconds: 120 }),
      }),
    });
    try {
      // The factory's result went through resolveOptions (defaults filled: options.spec tests what it refuses).
      expect(asyncApp.app.get<IdempotencySettings>(IDEMPOTENCY_SETTINGS)).toMatchObject({
        serviceName: 'widgets-2030',
        ttlSeconds: 120,
        lockTimeoutMs: 30_000,
      });
    } finally {
      await asyncApp.close();
    }
  });
});
