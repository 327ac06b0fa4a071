import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { JOURNAL_TTL_INDEX } from '../../src/payment-stripe/stripe-request.journal.js';
import { onEmulator } from '../support/backend.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const TTL_SECONDS = 3600;
const TOMBSTONE_SECONDS = 7200;
const DAY = 86400;

/**
 * The Stripe request journal's retention (stripe_requests): a TTL index on
 * firstSentAt that outlives everything that can still ask about a key - a
 * missing entry reads as "nothing was sent" (journalRetentionSeconds).
 * The emulator never expires documents: what is tested is the index as
 * created, and that its expiry falls after the last moment the service
 * could still reach the adapter with a key it journaled.
 */
describe('Stripe request journal retention', () => {
  const fake = new StripeFake();
  let t: TestApp | undefined;
  const boot = (env: Record<string, string> = {}) =>
    startApp({
      dbName: 'test_stripe_journal_retention',
      keepData: true,
      env: {
        ...fake.serviceEnv(),
        STRIPE_MAX_NETWORK_RETRIES: '0',
        IDEMPOTENCY_TTL_SECONDS: String(TTL_SECONDS),
        IDEMPOTENCY_TOMBSTONE_SECONDS: String(TOMBSTONE_SECONDS),
        ...env,
      },
    });
  const ttlIndex = async (app: TestApp) =>
    (await app.db.collection('stripe_requests').listIndexes().toArray()).find((index) => index.name === JOURNAL_TTL_INDEX);

  beforeAll(async () => {
    await fake.start();
  });
  afterEach(async () => {
    expect(fake.violations.splice(0)).toEqual([]);
    await t?.close();
    t = undefined;
  });
  afterAll(async () => fake.stop());

  it('boots with a TTL index on firstSentAt: record TTL + idempotency tombstone + a day', async () => {
    t = await boot();
    const index = await ttlIndex(t);
    expect(index).toMatchObject({ key: { firstSentAt: 1 }, expireAfterSeconds: TTL_SECONDS + TOMBSTONE_SECONDS + DAY });
  });

  it('a journaled charge outlives its record and its idempotency tombstone: no key expires while the service can still ask', async () => {
    t = await boot();
    const key = `retention-${Date.now()}`;
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody());
    expect(created.status).toBe(201);
    const chargeKey = `charge:${created.body.id}`;
    const entry = await t.db.collection<{ _id: string; firstSentAt: Date }>('stripe_requests').findOne({ _id: chargeKey });
    expect(entry).not.toBeNull();
    const record = await t.db
      .collection<{ _id: string; purgeAt: Date | null; status: string }>('idempotency_records')
      .findOne({ _id: { $regex: `:key:${key}$` } as never });
    expect(record?.status).toBe('complete');
    const index = await ttlIndex(t);
    const expiresAt = entry!.firstSentAt.getTime() + Number(index?.expireAfterSeconds) * 1000;
    // After purgeAt the key is refused by its idempotency tombstone for TOMBSTONE_SECONDS: nothing reaches the adapter under it.
    const lastAsked = record!.purgeAt!.getTime() + TOMBSTONE_SECONDS * 1000;
    expect(expiresAt).toBeGreaterThan(lastAsked);
    // With a day to spare for a reaper that was down (a pending record's clock starts when it is reaped).
    expect(expiresAt - lastAsked).toBeGreaterThanOrEqual(DAY * 1000 - 60_000);
  });

  const noCollMod = 'the emulator has no collMod (a real replica set runs it in the hosted CI)';
  if (onEmulator()) process.stdout.write(`SKIPPED on the emulator: the TTL index changed in place - ${noCollMod}\n`);
  (onEmulator() ? it.skip : it)(
    `follows the idempotency settings when they change: the index is changed in place at the next boot${onEmulator() ? ` (SKIPPED: ${noCollMod})` : ''}`,
    async () => {
      t = await boot({ IDEMPOTENCY_TOMBSTONE_SECONDS: String(TOMBSTONE_SECONDS * 2) });
      expect((await ttlIndex(t))?.expireAfterSeconds).toBe(TTL_SECONDS + 2 * TOMBSTONE_SECONDS + DAY);
    },
  );

  it('with the simulator behind the port the adapter touches nothing: no journal index', async () => {
    t = await startApp({ dbName: 'test_stripe_journal_retention_sim' });
    const indexes = await t.db
      .collection('stripe_requests')
      .listIndexes()
      .toArray()
      .catch(() => []);
    expect(indexes.map((index) => index.name)).not.toContain(JOURNAL_TTL_INDEX);
  });
});
