import type Stripe from 'stripe';
import { ProviderStatement, type ProviderSettlement } from '../payments/provider-statement.port.js';

/**
 * The settlement side of the books from Stripe's balance transactions
 * (paged with the SDK's auto-pagination, newest first): a charge's
 * transaction is the money it settled, net of the refunds of the same
 * PaymentIntent (whenever they fell: the simulator's statement reports a
 * charge net of its refunds too, so the comparison and its alert are the
 * same). The charge key comes from the charge's metadata, which Stripe
 * copies from the PaymentIntent.
 */
export class StripeProviderStatement extends ProviderStatement {
  constructor(private readonly stripe: Stripe) {
    super();
  }

  async settledBetween(from: Date, to: Date): Promise<ProviderSettlement[]> {
    const settled: ProviderSettlement[] = [];
    const listed = this.stripe.balanceTransactions.list({
      created: { gte: Math.floor(from.getTime() / 1000), lt: Math.ceil(to.getTime() / 1000) },
      type: 'charge',
      limit: 100,
      expand: ['data.source'],
    });
    for await (const transaction of listed) {
      const source = transaction.source as Stripe.Charge | string | null;
      if (!source || typeof source === 'string') continue;
      const chargeKey = source.metadata?.charge_key;
      const intentId = typeof source.payment_intent === 'string' ? source.payment_intent : source.payment_intent?.id;
      if (!chargeKey || !intentId) continue;
      const at = new Date(transaction.created * 1000);
      if (at < from || at >= to) continue;
      settled.push({
        chargeKey,
        chargeId: intentId,
        netMinor: transaction.amount - (await this.refunded(intentId)),
        currency: transaction.currency.toUpperCase(),
        at,
      });
    }
    return settled;
  }

  async settledForKeys(chargeKeys: string[]): Promise<ProviderSettlement[]> {
    const settled: ProviderSettlement[] = [];
    for (const chargeKey of chargeKeys) {
      if (!/^[A-Za-z0-9_:.-]{1,200}$/.test(chargeKey)) continue;
      // Reconciliation runs a processing bound after the period: the search index (lag under a minute) has caught up.
      const found = await this.stripe.paymentIntents.search({ query: `metadata['charge_key']:'${chargeKey}'`, limit: 10 });
      for (const intent of found.data) {
        if (intent.metadata?.charge_key !== chargeKey || intent.status !== 'succeeded') continue;
        settled.push({
          chargeKey,
          chargeId: intent.id,
          netMinor: intent.amount_received - (await this.refunded(intent.id)),
          currency: intent.currency.toUpperCase(),
          at: new Date(intent.created * 1000),
        });
      }
    }
    return settled;
  }

  private async refunded(intentId: string): Promise<number> {
    let total = 0;
    for await (const refund of this.stripe.refunds.list({ payment_intent: intentId, limit: 100 })) {
      if (refund.status === 'succeeded' || refund.status === 'pending') total += refund.amount;
    }
    return total;
  }
}
