/** The audit record of one erasure: it proves the erasure happened without naming the customer. */
export interface Erasure {
  _id: string;
  tenant: string;
  /**
   * The subject digest (an HMAC under PRIVACY_DIGEST_KEY): lets support
   * answer "was X erased?" given X and the key, reveals nothing otherwise.
   * The pseudonym written on the orders is not kept here: next to a digest
   * anyone could recompute, it would undo the erasure.
   */
  subjectHash: string;
  erasedAt: Date;
  counts: { orders: number; idempotencyRecords: number; outboxEvents: number };
  /**
   * The idempotency records it erased (their ids name a tenant and a client
   * key, never the customer): their cached answers leave the Redis fast path.
   */
  idempotencyRecordIds: string[];
  /** How long Redis must keep those records marked: the latest expiry among them. */
  cacheGuardUntil: Date;
  /**
   * When Redis was told (null: not yet). Written null in the erasure's own
   * transaction, so a crash or a Redis failure after the commit leaves the
   * invalidation due, and ErasureCacheSweep retries it, as the outbox does.
   */
  cacheInvalidatedAt: Date | null;
}
