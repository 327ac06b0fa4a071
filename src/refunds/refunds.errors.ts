import { DomainError } from '../common/domain-error.js';

/** The order has captured money, but less left to refund (after refunds succeeded or in flight) than asked. */
export class RefundExceedsCapturedError extends DomainError {
  readonly code = 'refund_exceeds_captured';
  constructor(refundableMinor: number) {
    super(`The refund is more than the ${refundableMinor} minor units left to refund on this order.`);
    this.extensions = { refundableMinor };
  }
}

/**
 * A refund of what is left (cancel by key) found another refund of the order
 * still in flight: its reservation is not money given back, and it may yet be
 * refused or abandoned. Nothing was written; ask again once it is final.
 */
export class RefundsInFlightError extends DomainError {
  readonly code = 'refund_in_flight';
  constructor(reservedMinor: number) {
    super(`${reservedMinor} minor units of this order are reserved by refunds still in flight; retry once they are final.`);
    this.retryAfterSeconds = 1;
    this.extensions = { reservedMinor };
  }
}

/** The order holds no captured money in its state (pending, authorized, failed, voided, refunded, ...). */
export class OrderNotRefundableError extends DomainError {
  readonly code = 'order_not_refundable';
  constructor(state: string) {
    super(`An order in state ${state} has no captured money to refund.`);
    this.extensions = { state };
  }
}

export class RefundNotFoundError extends DomainError {
  readonly code = 'refund_not_found';
  constructor() {
    super('No refund with this id on this order for your account.');
  }
}
