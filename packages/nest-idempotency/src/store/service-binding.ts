import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { IDEMPOTENCY_CONNECTION } from './schemas.js';
import type { Connection } from 'mongoose';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock } from '../ports.js';
import { retryWhileStoreUnavailable } from './boot-retry.js';

export class ServiceNameChangedError extends Error {
  constructor(stored: string, configured: string) {
    super(
      `The idempotency service name is "${configured}" but this database's records belong to "${stored}". ` +
        'The service name is part of every record id: renaming it would forget every live key (pending work claimed ' +
        'again, a second charge). Keep the name, or give the renamed service its own database ' +
        '(docs/runbooks/response-schema-drift.md, "Renaming the service").',
    );
    this.name = 'ServiceNameChangedError';
  }
}

interface ServiceBindingDoc {
  _id: 'service';
  name: string;
  since: Date;
}

/**
 * Binds the database to one service name (the `service` option) at boot (the first boot writes it,
 * every later one compares): the name is part of every record id (scope-key.ts),
 * so a silent rename would forget every live key at once. Refusing to start
 * is the safe answer to a configuration mistake that would otherwise charge
 * twice.
 */
@Injectable()
export class ServiceBinding implements OnApplicationBootstrap {
  private readonly logger = new Logger(ServiceBinding.name);

  constructor(
    @Inject(IDEMPOTENCY_CONNECTION) private readonly connection: Connection,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
    private readonly clock: IdempotencyClock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const meta = this.connection.db!.collection<ServiceBindingDoc>('idempotency_meta');
    // Tried again while the store cannot answer yet (no primary, a restart behind a dead process's transaction).
    const bound = await retryWhileStoreUnavailable(
      () =>
        meta.findOneAndUpdate(
          { _id: 'service' },
          { $setOnInsert: { name: this.config.serviceName, since: this.clock.now() } },
          { upsert: true, returnDocument: 'after' },
        ),
      (error, delayMs) => this.logger.warn(`Service binding not read yet (${error.name}: ${error.message}); retrying in ${delayMs} ms`),
    );
    if (bound && bound.name !== this.config.serviceName) throw new ServiceNameChangedError(bound.name, this.config.serviceName);
  }
}
