import { randomUUID } from 'node:crypto';
import type { RecordLease } from './idempotency-record.js';

/** A fresh lease (new owner token unless renewing one) that runs for `timeoutMs` from `now`. */
export function newLease(now: Date, timeoutMs: number, owner: string = randomUUID()): RecordLease {
  return { owner, lockedAt: now, expiresAt: new Date(now.getTime() + timeoutMs) };
}
