/** What became of a received event; the row exists if and only if that outcome committed. */
export type InboxOutcome = 'applied' | 'ignored' | 'unknown_type';

/**
 * One provider event, recorded once (webhook_inbox; `_id` = webhook-id) in
 * the same transaction as its effect. The raw body is never kept: what the
 * service read from it is.
 */
export interface InboxEvent {
  _id: string;
  type: string;
  chargeKey: string | null;
  sequence: number | null;
  occurredAt: Date;
  receivedAt: Date;
  outcome: InboxOutcome;
  /** Why an event changed nothing (`already_final`, `stale`, `unknown_order`, ...); null when applied. */
  reason: string | null;
  orderId: string | null;
  tenant: string | null;
}
