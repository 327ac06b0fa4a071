import { DomainError } from '../../common/domain-error.js';
import type { OrderState } from '../order-state.js';

/** Refused in the claim transaction: nothing was written, the provider was not called. */
export class OrderNotCapturableError extends DomainError {
  readonly code = 'order_not_capturable';
  constructor(state: OrderState, held: boolean) {
    super(
      held
        ? 'Another capture or void of this order is in progress.'
        : `Only an authorized order (manual capture) can be captured; this one is ${state}.`,
    );
    this.extensions = { state };
  }
}

export class OrderNotVoidableError extends DomainError {
  readonly code = 'order_not_voidable';
  constructor(state: OrderState, held: boolean) {
    super(
      held
        ? 'Another capture or void of this order is in progress.'
        : `Only an authorized order (manual capture) can be voided; this one is ${state}.`,
    );
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
