import { describe, expect, it } from '@jest/globals';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { useStripeTestApp } from '../support/stripe-fake/stripe-test-app.js';
import { auth, orderBody } from '../support/test-app.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * An authorization's deadline is the one Stripe reports for the card charge
 * (payment_method_details.card.capture_before: some networks lapse before 7
 * days), not a flat 7 days from the PaymentIntent (issue 49 item 4).
 */
describe('Stripe: the authorization deadline is the card charge capture_before', () => {
  const stripe = useStripeTestApp('test_stripe_authorization_deadline');
  const fake = stripe.fake;

  const authorized = async (key: string) => {
    const res = await stripe.app
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ capture: 'manual' }))
      .expect(201);
    const stored = await stripe.app.db.collection('orders').findOne({ _id: res.body.id as never });
    return { body: res.body, stored: stored! };
  };

  it('a network that lapses in 2 days: the order shows and keeps a 2-day deadline', async () => {
    fake.authorizationLifetimeSeconds = 2 * 24 * 60 * 60;
    const { body, stored } = await authorized('deadline-2d');
    const [intent] = [...fake.intents.values()];
    const expected = ((intent.created as number) + 2 * 24 * 60 * 60) * 1000;
    expect(new Date(body.authorizationExpiresAt).getTime()).toBe(expected);
    expect((stored.authorizationExpiresAt as Date).getTime()).toBe(expected);
  });

  it('the reaper and a cancel by key (chargeOrCancel) see the same 2-day deadline as the request', async () => {
    fake.authorizationLifetimeSeconds = 2 * 24 * 60 * 60;
    const gateway = stripe.app.app.get(PaymentGateway);
    // The request authorized at Stripe and died before storing anything: the reaper's look at its key finds the authorization.
    const request = { chargeKey: 'chg_deadline_reaper', amountMinor: 2500, currency: 'USD', paymentToken: 'tok_visa', reference: 'ord_x' };
    expect((await gateway.authorize(request)).outcome).toBe('authorized');
    const [intent] = [...fake.intents.values()];
    const expected = ((intent.created as number) + 2 * 24 * 60 * 60) * 1000;
    const settled = await gateway.chargeOrCancel(request.chargeKey);
    expect(settled.outcome).toBe('authorized');
    expect(settled.outcome === 'authorized' && settled.authorization.expiresAt.getTime()).toBe(expected);
  });

  it('the usual 7 days when Stripe reports 7', async () => {
    const { stored } = await authorized('deadline-7d');
    const lifetime = (stored.authorizationExpiresAt as Date).getTime() - (stored.createdAt as Date).getTime();
    expect(Math.abs(lifetime - 7 * DAY_MS)).toBeLessThan(60_000);
  });
});
