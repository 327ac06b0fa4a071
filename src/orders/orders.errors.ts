import { DomainError } from '../common/domain-error.js';

export class OrderNotFoundError extends DomainError {
  readonly code = 'order_not_found';
  constructor() {
    super('No order with this id for your account.');
  }
}

export class AmountOutOfRangeError extends DomainError {
  readonly code = 'amount_out_of_range';
  /** `detail`: the payment provider's own limit, when that is what the total is outside of. */
  constructor(limit: number, detail?: string) {
    super(detail ?? `The order total must be between 1 and ${limit} minor units.`);
  }
}
