export type OrderState =
  | 'pending'
  | 'processing'
  | 'authorized'
  | 'charged'
  | 'saved'
  | 'captured'
  | 'partially_refunded'
  | 'refunded'
  | 'voided'
  | 'expired'
  | 'failed';

export const ORDER_STATES: readonly OrderState[] = [
  'pending',
  'processing',
  'authorized',
  'charged',
  'saved',
  'captured',
  'partially_refunded',
  'refunded',
  'voided',
  'expired',
  'failed',
];

/**
 * The whole state machine, one table. Every transition is a conditional
 * update on the expected current state (order.repository.ts).
 *
 *   pending -> charged -> saved                 automatic capture (the create's 201)
 *   pending -> processing -> charged | failed   the provider answers later, by webhook (the create's 202)
 *   pending -> authorized -> captured | voided | expired
 *                                               manual capture (the create's 201 is the authorization)
 *   saved | captured -> partially_refunded -> refunded
 *                                               refunds (a partial refund that leaves money stays partially_refunded);
 *                                               back again when the provider fails a refund after it succeeded
 *   pending -> failed                           declined, or abandoned with nothing charged
 *
 * `failed` is reached only before the provider took money: once it has
 * charged, an order never goes back to before the charge (refunds undo
 * money; a refund that failed late undoes that refund, never the charge).
 */
const TRANSITIONS: Record<OrderState, readonly OrderState[]> = {
  pending: ['charged', 'processing', 'authorized', 'failed'],
  processing: ['charged', 'failed'],
  authorized: ['captured', 'voided', 'expired'],
  charged: ['saved'],
  saved: ['partially_refunded', 'refunded'],
  captured: ['partially_refunded', 'refunded'],
  // Back: a refund the provider failed after it succeeded gives its amount back (refunds/refund-failure.ts).
  partially_refunded: ['refunded', 'saved', 'captured'],
  refunded: ['partially_refunded', 'saved', 'captured'],
  voided: [],
  expired: [],
  failed: [],
};

/** States with captured money a refund may draw on (refundableMinor says how much is left). */
export const REFUNDABLE_STATES: readonly OrderState[] = ['saved', 'captured', 'partially_refunded'];

/**
 * The create operation's own work goes on only from these: the workflow
 * drives pending and charged orders to where the create answers. Every
 * other state is the create's answer (saved, authorized, processing,
 * failed) or a later operation's business (capture, void, refund, webhook).
 */
export function isCreateInProgress(state: OrderState): boolean {
  return state === 'pending' || state === 'charged';
}

export function canTransition(from: OrderState, to: OrderState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isFinal(state: OrderState): boolean {
  return TRANSITIONS[state].length === 0;
}

export class IllegalTransitionError extends Error {
  constructor(from: OrderState, to: OrderState) {
    super(`Order cannot move from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

export function assertTransition(from: OrderState, to: OrderState): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(from, to);
}
