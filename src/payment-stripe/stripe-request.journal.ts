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

/** The journal's TTL index (on firstSentAt). */
export const JOURNAL_TTL_INDEX = 'stripe_requests_ttl';

/** Stripe keeps a key 24 hours; the journal keeps it this much longer again, for a reaper that was down a day. */
const MARGIN_SECONDS = 24 * 60 * 60;

/**
 * How long the journal keeps a key - longer than anything can still ask
 * about it. A missing entry reads as "nothing was ever sent under this key"
 * (reconciliation binds the key to a tombstone and answers canceled), so an
 * entry expired too early would turn a charge Stripe made into an order
 * abandoned with the money taken. Who reads an entry, and until when:
 *
 * - the request and its retries, and the reaper (chargeOrCancel,
 *   operationOrCancel) while the key's idempotency record lives: it is
 *   written before the entry (so is older), reaped, kept
 *   IDEMPOTENCY_TTL_SECONDS, and then its key is refused by the idempotency
 *   tombstone for IDEMPOTENCY_TOMBSTONE_SECONDS - after that no request and
 *   no reaper can reach the adapter with that key again;
 * - the journal's own tombstone stops a late sender (a zombie) for as long;
 * - capture, void, refund and the processing sweep read the PaymentIntent id
 *   here, and fall back to Stripe's search (consistent long before) when the
 *   entry is gone - so they need nothing longer.
 *
 * Hence: record TTL + idempotency tombstone + a day of margin for a reaper
 * that was down (a pending record's clock starts when it is finally reaped).
 */
export function journalRetentionSeconds(idempotency: { ttlSeconds: number; tombstoneSeconds: number }): number {
  return idempotency.ttlSeconds + idempotency.tombstoneSeconds + MARGIN_SECONDS;
}

export class StripeRequestJournal {
  constructor(private readonly entries: Collection<JournalEntry>) {}

  /**
   * The TTL index on firstSentAt, expiring entries after `seconds`
   * (journalRetentionSeconds): created at boot, and changed in place
   * (collMod) when the idempotency settings it follows have changed.
   */
  async ensureRetention(seconds: number): Promise<void> {
    const existing: { name?: string; expireAfterSeconds?: number }[] = await this.entries
      .listIndexes()
      .toArray()
      .catch((error: { code?: number }) => {
        // NamespaceNotFound: the collection is not there yet.
        if (error.code === 26) return [];
        throw error;
      });
    const index = existing.find((candidate) => candidate.name === JOURNAL_TTL_INDEX);
    if (!index) {
      await this.entries.createIndex({ firstSentAt: 1 }, { name: JOURNAL_TTL_INDEX, expireAfterSeconds: seconds });
      return;
    }
    if (index.expireAfterSeconds === seconds) return;
    await this.entries.db.command({
      collMod: this.entries.collectionName,
      index: { name: JOURNAL_TTL_INDEX, expireAfterSeconds: seconds },
    });
  }

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

  /**
   * Reconciliation canceled the key at Stripe too: later callers stop before
   * sending. With `sentAt`, only if the entry's window has not been restarted
   * since (a request's first send past the window): false, nothing changed.
   */
  async canceled(key: string, sentAt?: Date): Promise<boolean> {
    const filter = sentAt ? { _id: key, firstSentAt: sentAt } : { _id: key };
    const done = await this.entries.updateOne(filter, { $set: { call: { kind: 'canceled' } } }, { writeConcern: MAJORITY });
    return done.matchedCount === 1;
  }

  /**
   * Past Stripe's key window, with nothing found at Stripe, a request sends
   * the journaled call as a first send: its window starts now, so its own
   * retries replay it under the key instead of looking up an object the
   * search index may not show yet. False: another caller restarted or
   * canceled the entry first (read it again).
   */
  async restarted(key: string, sentAt: Date, now: Date): Promise<boolean> {
    const done = await this.entries.updateOne(
      { _id: key, firstSentAt: sentAt, 'call.kind': { $ne: 'canceled' } },
      { $set: { firstSentAt: now } },
      { writeConcern: MAJORITY },
    );
    return done.matchedCount === 1;
  }
}
