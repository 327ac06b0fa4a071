import { IdempotencyModule, registerProblemGuidance, type IdempotencyModuleOptions } from '@idempotent-orders/nest-idempotency';
import type { FastifyRequest } from 'fastify';
import { requestState } from '../auth/tenant.js';
import { Clock } from '../common/clock.js';
import { APP_PROBLEMS } from '../common/error-status.js';
import {
  appConfig,
  idempotencyConfig,
  mongoConfig,
  reaperConfig,
  redisConfig,
  type AppConfig,
  type IdempotencyConfig,
  type MongoConfig,
  type ReaperConfig,
  type RedisConfig,
} from '../config/config.tokens.js';
import { IDEMPOTENCY_METRICS } from '../metrics/metrics.module.js';

/**
 * This app's registration of the idempotency package: its environment
 * (src/config, unchanged names) mapped to the package's options, the
 * server clock and the Prometheus metrics as its ports, the tenant the
 * API-key guard resolved, and the app's problem codes added to the package's
 * guidance table. Registered once, in AppModule (it is global).
 */
export const AppIdempotencyModule = IdempotencyModule.forRootAsync({
  ports: { clock: Clock, metrics: IDEMPOTENCY_METRICS },
  inject: [appConfig.KEY, idempotencyConfig.KEY, reaperConfig.KEY, redisConfig.KEY, mongoConfig.KEY],
  useFactory: (
    app: AppConfig,
    idempotency: IdempotencyConfig,
    reaper: ReaperConfig,
    redis: RedisConfig,
    mongo: MongoConfig,
  ): IdempotencyModuleOptions => {
    // At boot, before any request can be answered: problem() writes every code's guidance from this one table.
    registerProblemGuidance(APP_PROBLEMS);
    return {
      service: app.serviceName,
      tenant: (request: FastifyRequest) => requestState(request).tenant,
      encryption: { current: idempotency.encryptionKey, decrypt: idempotency.decryptionKeys },
      digestKey: idempotency.digestKey,
      ttlSeconds: idempotency.ttlSeconds,
      lockTimeoutMs: idempotency.lockTimeoutMs,
      tombstoneSeconds: idempotency.tombstoneSeconds,
      inFlight: { waitMs: idempotency.inFlightWaitMs, maxWaiters: idempotency.inFlightMaxWaiters },
      resumeWindowMs: idempotency.resumeWindowMs,
      transactionMaxRetryMs: mongo.transactionMaxRetryMs,
      reaper,
      fastPath: redis.url
        ? {
            url: redis.url,
            namespace: redis.namespace,
            commandTimeoutMs: redis.commandTimeoutMs,
            breaker: {
              errorPercent: redis.breakerErrorPercent,
              volumeThreshold: redis.breakerVolumeThreshold,
              resetMs: redis.breakerResetMs,
            },
          }
        : undefined,
      duplicateGuard: idempotency.duplicateGuard
        ? {
            windowSeconds: idempotency.duplicateGuard.windowSeconds,
            tenants: tenantsOf(idempotency.duplicateGuard.tenants),
          }
        : undefined,
      // DatabaseBootstrap creates every model's collection and indexes, the package's included.
      indexes: 'manual',
      bypass: app.benchDisableIdempotency,
    };
  },
});

/** DUPLICATE_GUARD_TENANTS: `*` (every tenant) or the listed ones. */
function tenantsOf(tenants: '*' | string[]): (tenant: string) => boolean {
  if (tenants === '*') return () => true;
  const listed = new Set(tenants);
  return (tenant) => listed.has(tenant);
}
