import type { JournalEntry } from './stripe-request.journal.js';

/**
 * Stripe keeps an idempotency key 24 hours. Inside this window (an hour of
 * margin for clock skew and slow calls) a replay under the key answers what
 * the first call did; past it a replay would be a NEW request.
 */
export const KEY_WINDOW_MS = 23 * 60 * 60 * 1000;

/** Who asks about a key: a client's request (or its retry), or the reaper settling a record nobody finished. */
export type KeyCaller = 'request' | 'reaper';

/**
 * What the adapter does with a journaled key, by the entry's age and who
 * asks. The one place this rule lives: the request path (charge, authorize,
 * capture, void, refund) and the reaper (chargeOrCancel, operationOrCancel)
 * both follow it, so neither can re-send past the window (issue 49).
 *
 * - `canceled`: reconciliation bound the key to a tombstone; nothing is sent.
 * - `send`: inside the window, the request repeats the journaled call under
 *   its key - Stripe answers what the first one did.
 * - `cancel`: inside the window, the reaper binds the key to a tombstone; if
 *   Stripe says the key is taken, it repeats the journaled call for its answer.
 * - `look_up`: past the window a send would move money again. Look the object
 *   up and answer what it shows. Only when nothing shows: the reaper cancels
 *   the key, a request sends - a first send, since Stripe never got one - and
 *   restarts the window in the journal so its own retries replay it.
 */
export type KeyStep = { step: 'canceled' } | { step: 'send' } | { step: 'cancel' } | { step: 'look_up'; ifNothing: 'send' | 'cancel' };

export function keyStep(entry: Pick<JournalEntry, 'call' | 'firstSentAt'>, now: Date, caller: KeyCaller): KeyStep {
  if (entry.call.kind === 'canceled') return { step: 'canceled' };
  if (!withinKeyWindow(entry, now)) return { step: 'look_up', ifNothing: caller === 'request' ? 'send' : 'cancel' };
  return caller === 'request' ? { step: 'send' } : { step: 'cancel' };
}

/** Whether Stripe still holds the key's first answer (a replay under it is that answer, not a new request). */
export function withinKeyWindow(entry: Pick<JournalEntry, 'firstSentAt'> | null, now: Date): boolean {
  return !!entry && now.getTime() - entry.firstSentAt.getTime() < KEY_WINDOW_MS;
}
