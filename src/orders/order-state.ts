export type OrderState = 'pending' | 'charged' | 'saved' | 'failed';

export const ORDER_STATES: readonly OrderState[] = ['pending', 'charged', 'saved', 'failed'];

/**
 * The whole state machine. `failed` is reached only from `pending` (declined,
 * or abandoned with nothing charged): once the provider has charged, the
 * order can only move forward to `saved`.
 */
const TRANSITIONS: Record<OrderState, readonly OrderState[]> = {
  pending: ['charged', 'failed'],
  charged: ['saved'],
  saved: [],
  failed: [],
};

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
