import { describe, expect, it } from '@jest/globals';
import type Stripe from 'stripe';
import { paymentEventOf } from './stripe-event.translator.js';

const refund = (overrides: Record<string, unknown> = {}) => ({
  id: 're_3Pq',
  object: 'refund',
  amount: 1000,
  currency: 'usd',
  status: 'failed',
  failure_reason: 'expired_or_canceled_card',
  metadata: { refund_key: 'refund:re_0123456789abcdef01234567', charge_key: 'charge:ord_0123456789abcdef01234567' },
  ...overrides,
});
const event = (type: string, object: Record<string, unknown>) =>
  ({ id: 'evt_1', type, created: 1_800_000_000, data: { object } }) as unknown as Stripe.Event;

describe('Stripe refund events in the inbox words', () => {
  it.each(['refund.failed', 'refund.updated', 'charge.refund.updated'])(
    '%s of a failed refund of ours is refund.failed by our refund key',
    (type) => {
      expect(paymentEventOf(event(type, refund()))).toEqual({
        id: 'evt_1',
        type: 'refund.failed',
        occurredAt: new Date(1_800_000_000 * 1000),
        charge: null,
        refund: {
          refundKey: 'refund:re_0123456789abcdef01234567',
          providerRefundId: 're_3Pq',
          amountMinor: 1000,
          currency: 'USD',
          failureReason: 'expired_or_canceled_card',
        },
      });
    },
  );

  it('a refund.updated that is no failure, or a refund without our key, is an unknown type (acknowledged, never applied)', () => {
    expect(paymentEventOf(event('refund.updated', refund({ status: 'succeeded' })))).toMatchObject({
      type: 'stripe.refund.updated',
      charge: null,
    });
    expect(paymentEventOf(event('refund.failed', refund({ metadata: {} })))).toMatchObject({ type: 'stripe.refund.failed', charge: null });
    expect(paymentEventOf(event('refund.failed', { ...refund(), object: 'charge' })).refund).toBeUndefined();
  });

  it('a failure without a reason says unknown rather than inventing one', () => {
    expect(paymentEventOf(event('refund.failed', refund({ failure_reason: undefined }))).refund?.failureReason).toBe('unknown');
  });
});
