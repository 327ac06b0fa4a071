/** The order every test starts from: 2 x 12.50 USD, paid with the test card that succeeds. */
export function orderBody(overrides: Record<string, unknown> = {}) {
  return {
    customerId: 'cus_123',
    currency: 'USD',
    items: [{ sku: 'sku_1', quantity: 2, unitPriceMinor: 1250 }],
    paymentMethod: { token: 'tok_visa' },
    ...overrides,
  };
}
