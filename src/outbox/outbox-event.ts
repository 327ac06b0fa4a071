export type OutboxStatus = 'pending' | 'published';

/** An event written in the same transaction as the change it announces. */
export interface OutboxEvent {
  /** Also the consumers' deduplication id: delivery is at least once. */
  _id: string;
  tenant: string;
  type: string;
  /** The id of the thing the event is about (orders: the order id). Absent only on events an earlier release wrote. */
  aggregateId?: string;
  /** Version of the payload's shape for this type, from 1: consumers evolve by it. Absent only on events an earlier release wrote (1). */
  schemaVersion?: number;
  /** The event's position among its aggregate's events in commit order, from 1. Absent only on events an earlier release wrote. */
  sequence?: number;
  payload: Record<string, unknown>;
  status: OutboxStatus;
  attempts: number;
  availableAt: Date;
  createdAt: Date;
  publishedAt: Date | null;
  lastError: string | null;
  /** The relay batch that holds the event now (its claim token); the marks compare-and-set on it. */
  claim?: string | null;
}
