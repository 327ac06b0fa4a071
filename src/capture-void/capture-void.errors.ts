import { DomainError } from '../common/domain-error.js';
import type { OrderState } from '../orders/order-state.js';

/** Why an order cannot be captured or voided now: another one of them holds it, or it is not authorized. */
function notAuthorized(verb: 'captured' | 'voided', state: OrderState, held: boolean): string {
  return held
    ? 'Another capture or void of this order is in progress.'
    : `Only an authorized order (manual capture) can be ${verb}; this one is ${state}.`;
}

/** Refused in the claim transaction: nothing was written, the provider was not called. */
export class OrderNotCapturableError extends DomainError {
  readonly code = 'order_not_capturable';
  constructor(state: OrderState, held: boolean) {
    super(notAuthorized('captured', state, held));
    this.extensions = { state };
  }
}

export class OrderNotVoidableError extends DomainError {
  readonly code = 'order_not_voidable';
  constructor(state: OrderState, held: boolean) {
    super(notAuthorized('voided', state, held));
    this.extensions = { state };
  }
}

export class CaptureExceedsAuthorizedError extends DomainError {
  readonly code = 'capture_exceeds_authorized';
  constructor(authorizedMinor: number) {
    super(`A capture takes at most the authorized amount (${authorizedMinor} minor units).`);
    this.extensions = { authorizedMinor };
  }
}
