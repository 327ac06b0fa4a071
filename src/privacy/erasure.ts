/** The audit record of one erasure: it proves the erasure happened without naming the customer. */
export interface Erasure {
  _id: string;
  tenant: string;
  /** subjectDigest(tenant, customer id): lets support answer "was X erased?" given X, reveals nothing otherwise. */
  subjectHash: string;
  pseudonym: string;
  erasedAt: Date;
  counts: { orders: number; idempotencyRecords: number; outboxEvents: number };
}
