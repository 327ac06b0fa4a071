/** The audit record of one erasure: it proves the erasure happened without naming the customer. */
export interface Erasure {
  _id: string;
  tenant: string;
  /** subjectDigest(tenant, customer id): lets support answer "was X erased?" given X, reveals nothing otherwise. */
  subjectHash: string;
  pseudonym: string;
  erasedAt: Date;
  counts: { orders: number; idempotencyRecords: number; outboxEvents: number };
  /**
   * The idempotency records it erased (their ids name a tenant and a client
   * key, never the customer): after the commit their cached answers leave the
   * Redis fast path, and a retry of a failed invalidation finds them here.
   */
  idempotencyRecordIds: string[];
}
