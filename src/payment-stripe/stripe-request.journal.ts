import type { Collection } from 'mongodb';

/** The Stripe call a key stands for, exactly as it was (or will be) sent: what a replay under the same key must repeat. */
export type JournaledCall =
  | { kind: 'charge' | 'authorize'; params: Record<string, unknown> }
  | { kind: 'capture' | 'void'; intentId: string; params: Record<string, unknown> }
  | { kind: 'refund'; params: Record<string, unknown> };

/**
 * One document per key the adapter used with Stripe, written (w: majority)
 * BEFORE the call goes out, first writer wins - or the tombstone of a key
 * reconciliation canceled before anything was sent under it.
 *
 * Why the adapter keeps it (Stripe forces it): Stripe has no look-up by
 * idempotency key, a replay must repeat the exact parameters, and the key
 * is forgotten after 24 hours. The journal gives reconciliation the request
 * to replay, the time it was first sent (inside or past the key window),
 * and the object id once an answer came back.
 */
export interface JournalEntry {
  _id: string;
  /** `canceled`: reconciliation took the key first; nothing is ever sent under it. */
  call: JournaledCall | { kind: 'canceled' };
  /** For operations: the charge key of the payment they act on. */
  chargeKey: string | null;
  firstSentAt: Date;
  /** The PaymentIntent or Refund id, once Stripe answered with one. */
  objectId: string | null;
}

const MAJORITY = { w: 'majority', j: true } as const;

export class StripeRequestJournal {
  constructor(private readonly entries: Collection<JournalEntry>) {}

  /** The entry under the key: this one if it is the first, else the one that was (a tombstone stays a tombstone). */
  async openOrGet(entry: JournalEntry): Promise<JournalEntry> {
    try {
      await this.entries.insertOne(entry, { writeConcern: MAJORITY });
      return entry;
    } catch (error) {
      if ((error as { code?: number }).code !== 11000) throw error;
    }
    const existing = await this.entries.findOne({ _id: entry._id }, { readConcern: { level: 'majority' } });
    if (!existing) throw new Error(`Journal entry ${entry._id} collided but cannot be read`);
    return existing;
  }

  find(key: string): Promise<JournalEntry | null> {
    return this.entries.findOne({ _id: key }, { readConcern: { level: 'majority' } });
  }

  /** Remember the object Stripe answered with (best effort: the entry's call can always be replayed for it). */
  async learned(key: string, objectId: string): Promise<void> {
    await this.entries.updateOne({ _id: key, objectId: null }, { $set: { objectId } }, { writeConcern: MAJORITY });
  }

  /** Reconciliation canceled the key at Stripe too: later callers stop before sending. */
  async canceled(key: string): Promise<void> {
    await this.entries.updateOne({ _id: key }, { $set: { call: { kind: 'canceled' } } }, { writeConcern: MAJORITY });
  }
}
