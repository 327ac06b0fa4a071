import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { PeriodicTask, TransactionRunner } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { paymentsConfig, reaperConfig, type PaymentsConfig, type ReaperConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { PaymentGateway, PaymentProviderUnavailableError } from '../payments/payment-gateway.port.js';
import { chargeKeyFor } from '../payments/payment.js';
import { PaymentsService } from '../payments/payments.service.js';
import { ORDER_COMPLETED_SCHEMA_VERSION } from '../orders/order-workflow.js';
import type { Order } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';
import { orderView } from '../orders/order.view.js';

/** What the sweep did with one lapsed authorization (the label of authorization_expiry_sweep_total). */
export type SweepOutcome = 'voided' | 'expired' | 'skipped' | 'lost' | 'error';

export interface SweepRun {
  examined: number;
  voided: number;
  expired: number;
  skipped: number;
  lost: number;
  error: number;
}

/** The provider key of the sweep's void of an order: derived, so every pass and every instance sends the same one. */
export function expiryVoidKeyFor(orderId: string): string {
  return `void:expiry:${orderId}`;
}

/**
 * Authorizations nobody captured: every pass takes a bounded batch of
 * authorized orders whose authorizationExpiresAt has passed and that no
 * capture or void holds, voids each at the provider under its derived key
 * (so a repeated pass, or two instances, make one void) and records the
 * outcome - voided, or expired when the provider says it already lapsed -
 * by a conditional update on the order (authorized, still held by nobody).
 * An update that no longer matches (a capture took the order meanwhile)
 * writes nothing; the capture then meets the provider's answer to this void
 * and a later pass finishes the order. Runs where the reaper runs.
 */
@Injectable()
export class AuthorizationExpirySweep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AuthorizationExpirySweep.name);
  private readonly task: PeriodicTask<SweepRun>;

  constructor(
    private readonly orders: OrderRepository,
    private readonly gateway: PaymentGateway,
    private readonly payments: PaymentsService,
    private readonly outbox: OutboxService,
    private readonly transactions: TransactionRunner,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
    @Inject(paymentsConfig.KEY) private readonly config: PaymentsConfig,
    @Inject(reaperConfig.KEY) private readonly reaper: ReaperConfig,
  ) {
    this.task = new PeriodicTask(() => this.sweep());
  }

  onApplicationBootstrap(): void {
    if (this.reaper.enabled && this.config.authorizationSweep.intervalMs > 0) this.task.start(this.config.authorizationSweep.intervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  /** One pass now (tests, operators); never two at once in one process. */
  runOnce(): Promise<SweepRun> {
    return this.task.runOnce();
  }

  private async sweep(): Promise<SweepRun> {
    const run: SweepRun = { examined: 0, voided: 0, expired: 0, skipped: 0, lost: 0, error: 0 };
    let lapsed: Order[];
    try {
      lapsed = await this.orders.findLapsedAuthorizations(this.clock.now(), this.config.authorizationSweep.batchSize);
    } catch (error) {
      this.logger.warn(`Authorization sweep could not list orders: ${(error as Error).message}`);
      return run;
    }
    for (const order of lapsed) {
      run.examined++;
      let outcome: SweepOutcome;
      try {
        outcome = await this.settle(order);
      } catch (error) {
        this.logger.warn({ msg: 'authorization sweep failed on an order', orderId: order._id, error: (error as Error).message });
        outcome = 'error';
      }
      run[outcome]++;
      this.metrics.authorizationSweep.inc({ outcome });
      // The provider is down: the rest of the batch would fail the same way; the next pass tries again (same keys).
      if (outcome === 'error' && this.providerDown) break;
    }
    this.providerDown = false;
    return run;
  }

  private providerDown = false;

  private async settle(order: Order): Promise<SweepOutcome> {
    const result = await this.gateway
      .void({ voidKey: expiryVoidKeyFor(order._id), chargeKey: chargeKeyFor(order._id) })
      .catch((error: unknown) => {
        if (error instanceof PaymentProviderUnavailableError) this.providerDown = true;
        throw error;
      });
    const operationId = result.outcome === 'succeeded' ? result.operation.id : null;
    let to: 'voided' | 'expired';
    if (result.outcome === 'succeeded') to = 'voided';
    else if (result.outcome === 'refused' && result.reason === 'authorization_expired') to = 'expired';
    else {
      // Captured or voided under another key (that operation's own T1 finishes the order), or a key nobody should cancel.
      this.logger.warn({ msg: 'authorization sweep left an order as it is', orderId: order._id, provider: result });
      return 'skipped';
    }
    const now = this.clock.now();
    const moved = await this.transactions.run(async (session) => {
      const current = await this.orders.findById(order._id, session);
      if (!current || current.state !== 'authorized' || current.pendingAction) return false;
      if (to === 'voided') {
        await this.orders.markVoided(session, current, now, null);
        await this.payments.settleAuthorization(session, current._id, 'voided', { providerOperationId: operationId! });
      } else {
        await this.orders.markExpired(session, current, now, null);
        await this.payments.settleAuthorization(session, current._id, 'expired');
      }
      const next: Order = { ...current, state: to, stateHistory: { ...current.stateHistory, [to]: now } };
      await this.outbox.enqueue(
        session,
        {
          id: `evt_${current._id}_${to}`,
          tenant: current.tenant,
          type: `order.${to}`,
          aggregateId: current._id,
          schemaVersion: ORDER_COMPLETED_SCHEMA_VERSION,
          payload: orderView(next),
        },
        now,
      );
      return true;
    });
    return moved ? to : 'lost';
  }
}
