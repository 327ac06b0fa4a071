import type { IdempotentResponse } from '@idempotent-orders/nest-idempotency';
import type { RefusalReason } from '../payments/payment-gateway.port.js';
import type { PaymentActionKind, PendingPaymentAction } from '../orders/order.js';

/*
 * What capture and void are: their operations, routes, provider keys and
 * how the provider's refusals are answered. The action's own shape
 * (PendingPaymentAction) is a field of the order, so it lives with it.
 */

export const CAPTURE_ORDER_OPERATION = 'orders.capture';
export const VOID_ORDER_OPERATION = 'orders.void';
/** The routes' templates, as the HTTP layer fingerprints them (voidByKey uses the same, so its key space is the route's). */
export const CAPTURE_ORDER_ROUTE = '/v1/orders/:id/capture';
export const VOID_ORDER_ROUTE = '/v1/orders/:id/void';

/** The provider key of a capture or void: derived from the attempt's claim, never random. */
export function providerKeyFor(action: Pick<PendingPaymentAction, 'kind' | 'claimId'>): string {
  return `${action.kind}:${action.claimId}`;
}

/** How a provider refusal of a capture or void is answered (stored and replayed). */
export const REFUSALS: Record<RefusalReason, { status: number; code: string; detail: string }> = {
  authorization_expired: { status: 422, code: 'authorization_expired', detail: 'The authorization lapsed before it was captured.' },
  authorization_voided: { status: 409, code: 'authorization_voided', detail: 'The authorization was voided.' },
  already_captured: { status: 409, code: 'already_captured', detail: 'The authorization was already captured.' },
  exceeds_captured: {
    status: 422,
    code: 'capture_exceeds_authorized',
    detail: 'The provider refused to take more than it authorized.',
  },
  no_such_payment: { status: 422, code: 'payment_operation_refused', detail: 'The provider holds no authorization it could act on.' },
  declined: { status: 422, code: 'payment_operation_refused', detail: 'The provider refused the operation.' },
};

export const FINAL_STATE: Record<PaymentActionKind, 'captured' | 'voided'> = { capture: 'captured', void: 'voided' };

export const FAULTS = {
  capture: { claim: 'after-capture-claim', provider: 'after-capture-provider' },
  void: { claim: 'after-void-claim', provider: 'after-void-provider' },
} as const;

/** Where the one path after the claim left the operation: its stored answer, or abandoned (the reaper canceled the key). */
export type Advanced = { decision: 'completed'; response: IdempotentResponse } | { decision: 'abandoned' };
