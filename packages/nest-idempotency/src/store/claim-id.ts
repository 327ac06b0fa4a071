import { createHash } from 'node:crypto';

/**
 * A stable id for one attempt of one record incarnation. Consumers derive
 * their resource ids from it (orders: the order id, and from that the charge
 * key), so whoever resumes the attempt - the client's retry or the reaper -
 * finds the same order and sends the provider the same charge key.
 */
export function deriveClaimId(recordId: string, createdAt: Date, attempt: number): string {
  return createHash('sha256').update(`${recordId}\n${createdAt.toISOString()}\n${attempt}`).digest('hex').slice(0, 32);
}
