import type { Db } from 'mongodb';
import type { StripeFake } from './stripe-fake.js';

/**
 * The fake's money in the shape the invariant checker reads as "the
 * provider's books" (test/support/invariants.ts reads the simulator's
 * `charges` and `operations`): one charge document per charge key (its
 * PaymentIntent), one operation per capture, void and refund. Written into
 * a scratch database, so the same checker judges the Stripe adapter.
 */
export async function exportBooks(fake: StripeFake, books: Db): Promise<void> {
  await books.collection('charges').deleteMany({});
  await books.collection('operations').deleteMany({});
  const charges = [];
  const operations = [];
  for (const pi of fake.intents.values()) {
    const metadata = pi.metadata as Record<string, string>;
    if (!metadata.charge_key) continue;
    const manual = pi.capture_method === 'manual';
    const status =
      pi.status === 'succeeded'
        ? manual
          ? 'captured'
          : 'succeeded'
        : pi.status === 'requires_capture'
          ? 'authorized'
          : pi.status === 'canceled' && manual
            ? 'voided'
            : String(pi.status);
    charges.push({
      _id: metadata.charge_key,
      id: pi.id,
      status,
      amountMinor: pi.amount,
      currency: String(pi.currency).toUpperCase(),
      capturedMinor: pi.amount_received,
    });
    if (manual && pi.status === 'succeeded' && metadata.capture_key) {
      operations.push(op(metadata.capture_key, 'capture', String(pi.latest_charge), metadata.charge_key, pi.amount_received as number, pi));
    }
    // A void is a cancel of the authorization on our request (Stripe's cancel takes no metadata: the intent names it).
    if (manual && pi.status === 'canceled' && pi.cancellation_reason === 'requested_by_customer') {
      operations.push(op(`void:${String(pi.id)}`, 'void', `${String(pi.id)}:void`, metadata.charge_key, pi.amount as number, pi));
    }
  }
  for (const refund of fake.refunds.values()) {
    const metadata = refund.metadata as Record<string, string>;
    if (refund.status !== 'succeeded' || !metadata.refund_key) continue;
    operations.push(op(metadata.refund_key, 'refund', String(refund.id), metadata.charge_key, refund.amount as number, refund));
  }
  if (charges.length > 0) await books.collection('charges').insertMany(charges as never[]);
  if (operations.length > 0) await books.collection('operations').insertMany(operations as never[]);
}

function op(key: string, kind: string, id: string, chargeKey: string, amountMinor: number, object: Record<string, unknown>) {
  return { _id: key, kind, status: 'succeeded', id, chargeKey, amountMinor, currency: String(object.currency).toUpperCase() };
}
