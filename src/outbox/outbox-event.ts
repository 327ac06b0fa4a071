export type OutboxStatus = 'pending' | 'published';

/** An event written in the same transaction as the change it announces. */
export interface OutboxEvent {
  /** Also the consumers' deduplication id: delivery is at least once. */
  _id: string;
  tenant: string;
  type: string;
  payload: Record<string, unknown>;
  status: OutboxStatus;
  attempts: number;
  availableAt: Date;
  createdAt: Date;
  publishedAt: Date | null;
  lastError: string | null;
}
