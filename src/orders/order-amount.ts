import { AmountOutOfRangeError } from './orders.errors.js';

/** Largest order total accepted, in minor units (10^12: ten billion in a two-decimal currency). */
export const MAX_ORDER_AMOUNT_MINOR = 1_000_000_000_000;

export interface PricedItem {
  quantity: number;
  unitPriceMinor: number;
}

/**
 * Sum of quantity x unit price in BigInt, so no intermediate product can
 * lose precision, then checked against the limits before it becomes a
 * number. Free items are fine; a free order is not a paid order (nothing to
 * charge, nothing to journal), so the total must be at least 1. Then
 * the payment provider's own limits for the currency (providerRefusal).
 */
export function orderAmountMinor(items: readonly PricedItem[], providerRefusal?: (amountMinor: number) => string | null): number {
  let total = 0n;
  for (const item of items) {
    if (!Number.isSafeInteger(item.quantity) || !Number.isSafeInteger(item.unitPriceMinor)) {
      throw new AmountOutOfRangeError(MAX_ORDER_AMOUNT_MINOR);
    }
    total += BigInt(item.quantity) * BigInt(item.unitPriceMinor);
  }
  if (total < 1n || total > BigInt(MAX_ORDER_AMOUNT_MINOR)) throw new AmountOutOfRangeError(MAX_ORDER_AMOUNT_MINOR);
  const refusal = providerRefusal?.(Number(total));
  if (refusal) throw new AmountOutOfRangeError(MAX_ORDER_AMOUNT_MINOR, refusal);
  return Number(total);
}
