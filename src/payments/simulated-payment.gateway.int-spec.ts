import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startApp, type TestApp } from '../../test/support/test-app.js';
import { PaymentGateway } from './payment-gateway.port.js';
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
