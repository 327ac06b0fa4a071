import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { SingleTransactionWorks } from '../protocol/single-transaction.js';
import { IdempotencyReaper } from '../recovery/reaper.js';
import { IDEMPOTENCY_PHASES_METADATA, IDEMPOTENT_ROUTE_METADATA, type IdempotentOptions } from './route-metadata.js';

/**
 * Gives the reaper a reconciler for every simple-mode operation the app
 * declares (an `@Idempotent()` handler without `@IdempotencyKey()`), unless
 * the app registered its own first. A stale simple-mode record committed
 * nothing but its claim, so the reconciler only ends the attempt `failed`
 * with nothing stored: a retry of the request then runs it afresh, and the
 * record no longer waits for a retry that may never come.
 */
@Injectable()
export class SimpleModeRecovery implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly reaper: IdempotencyReaper,
    private readonly single: SingleTransactionWorks,
  ) {}

  onApplicationBootstrap(): void {
    for (const operation of this.simpleModeOperations()) {
      if (!this.reaper.has(operation)) this.reaper.register(operation, (lease) => this.single.abandon(lease));
    }
  }

  private simpleModeOperations(): Set<string> {
    const operations = new Set<string>();
    for (const wrapper of this.discovery.getControllers()) {
      const prototype = wrapper.instance ? (Object.getPrototypeOf(wrapper.instance) as Record<string, () => unknown>) : null;
      if (!prototype) continue;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const options = this.reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE_METADATA, prototype[name]);
        if (options && this.reflector.get<boolean>(IDEMPOTENCY_PHASES_METADATA, prototype[name]) !== true)
          operations.add(options.operation);
      }
    }
    return operations;
  }
}
