import { setProblemTypeBaseUrl } from './problem.js';
import { ConfigurableModuleBuilder, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { getConnectionToken, getModelToken, MongooseModule } from '@nestjs/mongoose';
import {
  IDEMPOTENCY_SETTINGS,
  resolveOptions,
  type IdempotencyModuleExtras,
  type IdempotencyModuleOptions,
  type IdempotencySettings,
} from './options.js';
import { IdempotencyClock, IdempotencyMetrics, NoopIdempotencyMetrics, SystemClock } from './ports.js';
import { IdempotencyKeyInterceptor } from './http/idempotency.interceptor.js';
import { SimpleModeRecovery } from './http/simple-mode-recovery.js';
import { IdempotencyAttempts } from './protocol/attempts.js';
import { SingleTransactionWorks } from './protocol/single-transaction.js';
import { IdempotencyClaims } from './protocol/claims.js';
import { IdempotencyService } from './protocol/idempotency.service.js';
import { InFlightWaiters } from './protocol/in-flight-waiters.js';
import { SubjectDigests } from './protocol/ids.js';
import { StoredResponses } from './protocol/stored-responses.js';
import { LateRetries } from './protocol/tombstones.js';
import { IdempotencyAdminService } from './recovery/admin.service.js';
import { IdempotencyCancellation } from './protocol/cancellation.js';
import { IdempotencyErasure } from './recovery/erasure.js';
import { IdempotencyReaper } from './recovery/reaper.js';
import { IdempotencyRecordRepository } from './store/record.repository.js';
import { IDEMPOTENCY_CONNECTION, IDEMPOTENCY_MODELS, modelToken } from './store/schemas.js';
import { ServiceBinding } from './store/service-binding.js';
import { SubjectLockRepository } from './store/subject-lock.repository.js';
import { TombstoneRepository } from './store/tombstone.repository.js';
import { TransactionRunner } from './store/transaction-runner.js';
import { IdempotencyIndexes } from './store/indexes.js';
import { IdempotencyFastPath } from './fast-path/fast-path.js';
import { DuplicateGuard } from './protocol/duplicate-guard.js';
import { DuplicateGuardRepository } from './store/duplicate-guard.repository.js';
import { CacheConnection, NoCache } from './fast-path/cache-connection.js';

export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN: IDEMPOTENCY_MODULE_OPTIONS } =
  new ConfigurableModuleBuilder<IdempotencyModuleOptions>({ moduleName: 'Idempotency' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createIdempotencyOptions')
    .setExtras<IdempotencyModuleExtras>({ isGlobal: true, ports: {} }, (definition, extras) => ({
      ...definition,
      global: extras.isGlobal ?? true,
      imports: [...(definition.imports ?? []), DiscoveryModule, MongooseModule.forFeature(IDEMPOTENCY_MODELS, extras.connectionName)],
      providers: [...(definition.providers ?? []), settingsProvider(extras), ...portProviders(extras), ...INTERNAL_PROVIDERS],
      exports: PUBLIC_PROVIDERS,
    }))
    .build();

/** What a consumer injects. */
const PUBLIC_PROVIDERS = [
  IDEMPOTENCY_SETTINGS,
  IdempotencyService,
  IdempotencyAttempts,
  IdempotencyErasure,
  IdempotencyReaper,
  IdempotencyAdminService,
  IdempotencyCancellation,
  SubjectDigests,
  TransactionRunner,
  SingleTransactionWorks,
  IdempotencyKeyInterceptor,
];

const INTERNAL_PROVIDERS: Provider[] = [
  {
    // Loaded only when the fast path is on: an app without Redis never imports ioredis or opossum.
    provide: CacheConnection,
    inject: [IDEMPOTENCY_SETTINGS, IdempotencyMetrics],
    useFactory: async (settings: IdempotencySettings, metrics: IdempotencyMetrics): Promise<CacheConnection> => {
      if (!settings.fastPath) return new NoCache();
      const { RedisCache } = await import('./fast-path/redis-cache.js');
      return new RedisCache(settings.fastPath, metrics);
    },
  },
  TransactionRunner,
  IdempotencyRecordRepository,
  SubjectLockRepository,
  SubjectDigests,
  ServiceBinding,
  TombstoneRepository,
  DuplicateGuardRepository,
  DuplicateGuard,
  LateRetries,
  StoredResponses,
  IdempotencyClaims,
  IdempotencyService,
  IdempotencyAttempts,
  IdempotencyErasure,
  IdempotencyReaper,
  IdempotencyAdminService,
  IdempotencyCancellation,
  InFlightWaiters,
  IdempotencyFastPath,
  IdempotencyKeyInterceptor,
  SingleTransactionWorks,
  SimpleModeRecovery,
  IdempotencyIndexes,
];

/** Options validated once, at boot: a mistake stops the app with every problem listed. */
function settingsProvider(extras: IdempotencyModuleExtras): Provider {
  return {
    provide: IDEMPOTENCY_SETTINGS,
    inject: [IDEMPOTENCY_MODULE_OPTIONS],
    useFactory: (options: IdempotencyModuleOptions) => {
      const settings = resolveOptions(options, extras.connectionName);
      setProblemTypeBaseUrl(settings.problemTypeBaseUrl);
      return settings;
    },
  };
}

/** The app's providers behind the package's own tokens (useExisting), or the defaults: never a same-named token. */
function portProviders(extras: IdempotencyModuleExtras): Provider[] {
  return [
    { provide: IDEMPOTENCY_CONNECTION, useExisting: getConnectionToken(extras.connectionName) },
    ...IDEMPOTENCY_MODELS.map(({ name }) => ({ provide: modelToken(name), useExisting: getModelToken(name, extras.connectionName) })),
    extras.ports?.clock
      ? { provide: IdempotencyClock, useExisting: extras.ports.clock }
      : { provide: IdempotencyClock, useClass: SystemClock },
    extras.ports?.metrics
      ? { provide: IdempotencyMetrics, useExisting: extras.ports.metrics }
      : { provide: IdempotencyMetrics, useClass: NoopIdempotencyMetrics },
  ];
}

/**
 * The idempotency layer. Register it once, in your root module:
 *
 * ```ts
 * IdempotencyModule.forRootAsync({
 *   ports: { clock: IdempotencyClock, metrics: MY_METRICS },
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ service: 'widgets', tenant: (req) => req.user?.tenant, ... }),
 * })
 * ```
 *
 * Then declare `@Idempotent({ operation })` on a route and hand
 * `IdempotencyService.execute` your work: the record and your first
 * documents commit in one MongoDB transaction.
 */
@Module({})
export class IdempotencyModule extends ConfigurableModuleClass {}
