import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startApp, type TestApp } from '../../test/support/test-app.js';
import { PaymentGateway } from '../payments/payment-gateway.port.js';
import type { SimulatedPaymentGateway } from './simulated-payment.gateway.js';

/** The simulator stands for a provider: what it answers after a duplicate charge key must be durable. */
describe('simulated provider: the charge key that already exists', () => {
  let t: TestApp;
  let gateway: SimulatedPaymentGateway;
  let charges: Collection<{ _id: string }>;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_payment_simulator' });
    gateway = t.app.get(PaymentGateway) as SimulatedPaymentGateway;
    // The gateway's own handle on its collection, so the spy sees exactly its reads.
    charges = (gateway as unknown as { charges: Collection<{ _id: string }> }).charges;
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const existingCharge = {
    _id: 'charge:ord_0123456789abcdef01234567',
    status: 'succeeded',
    id: 'ch_existing',
    amountMinor: 2500,
    currency: 'USD',
    createdAt: new Date(),
  };

  it('reads the winner with majority read concern, and again while it is not visible yet', async () => {
    await t.simulatorDb.collection<{ _id: string }>('charges').insertOne({ ...existingCharge });
    const findOne = charges.findOne.bind(charges);
    // First read: the winning write is not majority-committed yet (or a failover rolled it back).
    const spy = jest
      .spyOn(charges, 'findOne')
      .mockImplementationOnce(async () => null)
      .mockImplementation(((filter: object, options: object) => findOne(filter, options)) as never);
    try {
      const found = await gateway.chargeOrCancel(existingCharge._id);
      expect(found).toMatchObject({ outcome: 'charged', charge: { id: 'ch_existing', amountMinor: 2500 } });
      expect(spy.mock.calls.length).toBeGreaterThanOrEqual(2);
      for (const call of spy.mock.calls) expect(call[1]).toMatchObject({ readConcern: { level: 'majority' } });
    } finally {
      spy.mockRestore();
    }
    // The reconciliation adopted the charge; it canceled nothing.
    expect(await t.simulatorDb.collection('charges').findOne({ _id: existingCharge._id as never })).toMatchObject({ status: 'succeeded' });
  });

  it('reports the provider unavailable (retry later) when the key stays invisible', async () => {
    await t.simulatorDb.collection<{ _id: string }>('charges').insertOne({ ...existingCharge });
    const spy = jest.spyOn(charges, 'findOne').mockImplementation(async () => null);
    try {
      await expect(gateway.chargeOrCancel(existingCharge._id)).rejects.toMatchObject({ code: 'payment_provider_unavailable' });
    } finally {
      spy.mockRestore();
    }
  });
});

/** The operations after a charge: each keyed, answered once, refused for good, and cancellable by the reaper. */
describe('simulated provider: captures, voids and refunds', () => {
  let t: TestApp;
  let gateway: SimulatedPaymentGateway;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_payment_simulator_operations' });
    gateway = t.app.get(PaymentGateway) as SimulatedPaymentGateway;
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const request = (chargeKey: string, paymentToken = 'tok_visa') => ({
    chargeKey,
    amountMinor: 2500,
    currency: 'USD',
    paymentToken,
    reference: chargeKey,
  });

  it('captures an authorization once: the same key answers the same, another key is refused, a void after it too', async () => {
    const authorized = await gateway.authorize(request('charge:a'));
    expect(authorized).toMatchObject({ outcome: 'authorized', authorization: { amountMinor: 2500 } });
    const first = await gateway.capture({ captureKey: 'capture:1', chargeKey: 'charge:a', amountMinor: 2000 });
    expect(first).toMatchObject({ outcome: 'succeeded', operation: { kind: 'capture', amountMinor: 2000 } });
    expect(await gateway.capture({ captureKey: 'capture:1', chargeKey: 'charge:a', amountMinor: 2000 })).toEqual(first);
    expect(await gateway.capture({ captureKey: 'capture:2', chargeKey: 'charge:a', amountMinor: 500 })).toEqual({
      outcome: 'refused',
      reason: 'already_captured',
    });
    expect(await gateway.void({ voidKey: 'void:1', chargeKey: 'charge:a' })).toEqual({ outcome: 'refused', reason: 'already_captured' });
    // When it was captured: a provider's statement lists the capture then (settlement reconciliation).
    expect(await t.simulatorDb.collection('charges').findOne({ _id: 'charge:a' as never })).toMatchObject({
      status: 'captured',
      capturedMinor: 2000,
      capturedAt: expect.any(Date),
    });
  });

  it('refuses to capture more than was authorized, or an authorization that lapsed', async () => {
    await gateway.authorize(request('charge:b'));
    expect(await gateway.capture({ captureKey: 'capture:b', chargeKey: 'charge:b', amountMinor: 2501 })).toEqual({
      outcome: 'refused',
      reason: 'exceeds_captured',
    });
    await gateway.authorize(request('charge:c', 'tok_auth_expires'));
    expect(await gateway.capture({ captureKey: 'capture:c', chargeKey: 'charge:c', amountMinor: 100 })).toEqual({
      outcome: 'refused',
      reason: 'authorization_expired',
    });
  });

  it('refunds up to the captured amount, never past it, and stores each answer under its key', async () => {
    await gateway.charge(request('charge:d'));
    const refund = (key: string, amountMinor: number) =>
      gateway.refund({ refundKey: key, chargeKey: 'charge:d', amountMinor, currency: 'USD' });
    expect(await refund('refund:1', 2000)).toMatchObject({ outcome: 'succeeded', operation: { amountMinor: 2000 } });
    expect(await refund('refund:2', 501)).toEqual({ outcome: 'refused', reason: 'exceeds_captured' });
    expect(await refund('refund:1', 2000)).toMatchObject({ outcome: 'succeeded', operation: { amountMinor: 2000 } });
    expect(await refund('refund:3', 500)).toMatchObject({ outcome: 'succeeded' });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: 'charge:d' as never })).toMatchObject({ refundedMinor: 2500 });
  });

  it('plays the refund test tokens: declined for good, unavailable with nothing stored', async () => {
    await gateway.charge(request('charge:e', 'tok_refund_decline'));
    expect(await gateway.refund({ refundKey: 'refund:e', chargeKey: 'charge:e', amountMinor: 100, currency: 'USD' })).toEqual({
      outcome: 'refused',
      reason: 'declined',
    });
    await gateway.charge(request('charge:f', 'tok_refund_down'));
    await expect(gateway.refund({ refundKey: 'refund:f', chargeKey: 'charge:f', amountMinor: 100, currency: 'USD' })).rejects.toMatchObject(
      {
        code: 'payment_provider_unavailable',
      },
    );
    expect(await t.simulatorDb.collection('operations').countDocuments({ _id: 'refund:f' as never })).toBe(0);
  });

  it('operationOrCancel: finds what was done under a key, or cancels the key so nothing can be done under it later', async () => {
    await gateway.charge(request('charge:g'));
    const done = await gateway.refund({ refundKey: 'refund:g1', chargeKey: 'charge:g', amountMinor: 100, currency: 'USD' });
    expect(await gateway.operationOrCancel('refund:g1')).toEqual(done);
    expect(await gateway.operationOrCancel('refund:g2')).toEqual({ outcome: 'canceled' });
    // The slow worker that still held refund:g2 comes late: nothing is refunded.
    expect(await gateway.refund({ refundKey: 'refund:g2', chargeKey: 'charge:g', amountMinor: 100, currency: 'USD' })).toEqual({
      outcome: 'canceled',
    });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: 'charge:g' as never })).toMatchObject({ refundedMinor: 100 });
  });

  it('answers processing for an asynchronous method, until it is settled', async () => {
    expect(await gateway.charge(request('charge:h', 'tok_async'))).toEqual({ outcome: 'processing' });
    expect(await gateway.chargeOrCancel('charge:h')).toEqual({ outcome: 'processing' });
    expect(await gateway.settleProcessing('charge:h', 'succeeded')).toBe('succeeded');
    expect(await gateway.settleProcessing('charge:h', 'declined')).toBe('succeeded');
    expect(await gateway.charge(request('charge:h', 'tok_async'))).toMatchObject({ outcome: 'succeeded', charge: { amountMinor: 2500 } });
  });

  it('processingOrCancel: cancels a card charge still processing, but a bank transfer cannot be canceled while processing', async () => {
    expect(await gateway.charge(request('charge:i', 'tok_async'))).toEqual({ outcome: 'processing' });
    expect(await gateway.processingOrCancel('charge:i')).toEqual({ outcome: 'canceled' });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: 'charge:i' as never })).toMatchObject({ status: 'canceled' });

    expect(await gateway.charge(request('charge:j', 'tok_bank_transfer'))).toEqual({ outcome: 'processing' });
    expect(await gateway.processingOrCancel('charge:j')).toEqual({ outcome: 'still_processing', method: 'bank_transfer' });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: 'charge:j' as never })).toMatchObject({ status: 'processing' });
    // The money arrives later, as a bank transfer does; then it is the charge's outcome.
    expect(await gateway.settleProcessing('charge:j', 'succeeded')).toBe('succeeded');
    expect(await gateway.processingOrCancel('charge:j')).toMatchObject({ outcome: 'succeeded', charge: { amountMinor: 2500 } });
  });
});
