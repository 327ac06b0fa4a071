import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import { runConformance, type Report } from '@idempotent-orders/idempotency-conformance';
import { findViolations } from '../support/invariants.js';
import { ACME_SECRET, connectMongo, databasesOf, killAllServices, startService, type ServiceProcess } from '../support/service-process.js';
import { exportBooks } from '../support/stripe-fake/provider-books.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';

const GLOBEX_SECRET = 'globex-secret-0123456789';

/**
 * The conformance kit once on the Stripe adapter: the built service as a
 * real process with PAYMENT_PROVIDER=stripe, talking to the Stripe fake;
 * every row passes and the money invariants hold on Stripe's books. The
 * outage row uses the fake's down card (tok_unavailable -> pm_card_unavailable).
 */
describe('the conformance kit on PAYMENT_PROVIDER=stripe', () => {
  const fake = new StripeFake();
  let mongo: MongoClient;
  let service: ServiceProcess;
  let report: Report;

  beforeAll(async () => {
    await fake.start();
    mongo = await connectMongo();
    service = await startService({
      label: 'conformance-stripe',
      env: {
        API_KEYS: `acme:${ACME_SECRET}:orders+admin,globex:${GLOBEX_SECRET}:orders+admin`,
        PAYMENT_PROVIDER: 'stripe',
        STRIPE_SECRET_KEY: 'sk_test_fake0123456789',
        STRIPE_WEBHOOK_SECRET: 'whsec_fake0123456789abcdef',
        STRIPE_API_BASE: `http://127.0.0.1:${fake.port}`,
      },
    });
    report = await runConformance({
      baseUrl: service.baseUrl,
      token: ACME_SECRET,
      tokenB: GLOBEX_SECRET,
      outageValue: 'tok_unavailable',
      refundPath: '/v1/orders/{id}/refunds',
      resourcePath: '/v1/orders/{id}',
    });
  });
  afterAll(async () => {
    await killAllServices();
    await fake.stop();
    await mongo?.close();
  });

  it('passes every row', () => {
    const failing = report.rows.filter((row) => row.status !== 'PASS').map((row) => ({ id: row.id, status: row.status }));
    expect(failing).toEqual([]);
    expect(report.conformant).toBe(true);
    expect(fake.violations).toEqual([]);
  });

  it("leaves the money consistent on Stripe's books: one PaymentIntent per order, balanced journals", async () => {
    const { db } = databasesOf(mongo, service);
    const books = mongo.db(`${service.dbName}_stripe_books`);
    await exportBooks(fake, books);
    expect(await findViolations({ db, simulatorDb: books })).toEqual([]);
    const keys = [...fake.intents.values()].map((pi) => (pi.metadata as Record<string, string>).charge_key).filter(Boolean);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
