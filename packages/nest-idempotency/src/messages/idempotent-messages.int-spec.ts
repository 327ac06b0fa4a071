// The idempotent message handler (issue 46): at most one effect per (consumer, message id), the inbox record
// and the effect in one transaction, a batch in one transaction. Checked on the database, not on return values.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { ClientSession } from 'mongoose';
import { startModuleApp, type ModuleApp } from '../../test/support/module-app.js';
import { IdempotentMessages, inboxId } from './idempotent-messages.js';

interface Msg {
  id: string;
  amount: number;
}

describe('IdempotentMessages: a consumer applies each message once in effect', () => {
  let t: ModuleApp;
  let messages: IdempotentMessages;
  /**
   * One entry per time the effect ran: the message ids it was given and how that attempt ended. Under the
   * conflict pass (EMULATOR_WRITE_CONFLICT_RATE) a transaction that met an injected write conflict runs its
   * callback again, so the claims are about every attempt and about the last one, not about a count of runs.
   */
  let attempts: { fresh: string[]; error?: unknown }[] = [];
  const effects = () => t.db.collection<{ _id: string; amount: number }>('message_effects');
  const inbox = () => t.db.collection('idempotency_inbox');

  /** The effect a consumer writes: one document per message, with the session (it commits with the inbox record). */
  const credit = async (session: ClientSession, fresh: Msg[]) => {
    const attempt: { fresh: string[]; error?: unknown } = { fresh: fresh.map((m) => m.id) };
    attempts.push(attempt);
    try {
      await effects().insertMany(
        fresh.map((m) => ({ _id: `effect_${m.id}`, amount: m.amount })),
        { session },
      );
    } catch (error) {
      attempt.error = error;
      throw error;
    }
  };
  const isTransient = (error: unknown) =>
    (error as { errorLabels?: string[] } | undefined)?.errorLabels?.includes('TransientTransactionError') === true ||
    (error as { errorLabelSet?: Set<string> } | undefined)?.errorLabelSet?.has('TransientTransactionError') === true;

  beforeAll(async () => {
    t = await startModuleApp({ dbName: 'test_pkg_messages', providers: [IdempotentMessages.provider()] });
    messages = t.app.get(IdempotentMessages);
  });
  beforeEach(async () => {
    attempts = [];
    await effects().deleteMany({});
    await inbox().deleteMany({});
  });
  afterAll(async () => t.close());

  it('a redelivered message is a duplicate: one effect, one inbox record', async () => {
    await expect(messages.handle('ledger', { id: 'evt_1', amount: 5 }, credit)).resolves.toBe('handled');
    await expect(messages.handle('ledger', { id: 'evt_1', amount: 5 }, credit)).resolves.toBe('duplicate');
    expect(attempts.map((a) => a.fresh)).toEqual(attempts.map(() => ['evt_1']));
    expect(await effects().find().toArray()).toEqual([{ _id: 'effect_evt_1', amount: 5 }]);
    expect(await inbox().find().toArray()).toEqual([
      expect.objectContaining({ _id: inboxId('ledger', 'evt_1'), consumer: 'ledger', messageId: 'evt_1' }),
    ]);
  });

  it('a batch is one transaction: the effect sees only the messages not handled before, a repeat inside the batch once', async () => {
    await messages.handle('ledger', { id: 'evt_a', amount: 1 }, credit);
    attempts = [];
    const outcome = await messages.handleBatch(
      'ledger',
      [
        { id: 'evt_a', amount: 1 },
        { id: 'evt_b', amount: 2 },
        { id: 'evt_b', amount: 2 },
        { id: 'evt_c', amount: 3 },
      ],
      credit,
    );
    expect(outcome.handled.map((m) => m.id)).toEqual(['evt_b', 'evt_c']);
    expect(outcome.duplicates.map((m) => m.id)).toEqual(['evt_a']);
    // Once per batch, never per message: every attempt of the batch's transaction got the two fresh ones together.
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts.map((a) => a.fresh)).toEqual(attempts.map(() => ['evt_b', 'evt_c']));
    expect((await effects().find().sort({ _id: 1 }).toArray()).map((e) => e._id)).toEqual(['effect_evt_a', 'effect_evt_b', 'effect_evt_c']);
    expect(await inbox().countDocuments()).toBe(3);
  });

  it('an effect that throws leaves nothing, not even the inbox record: the redelivery applies it', async () => {
    const failing = async (session: ClientSession, fresh: Msg[]) => {
      await credit(session, fresh);
      throw new Error('downstream refused');
    };
    await expect(messages.handleBatch('ledger', [{ id: 'evt_x', amount: 7 }], failing)).rejects.toThrow('downstream refused');
    expect(await effects().countDocuments()).toBe(0);
    expect(await inbox().countDocuments()).toBe(0);
    await expect(messages.handle('ledger', { id: 'evt_x', amount: 7 }, credit)).resolves.toBe('handled');
    expect(await effects().find().toArray()).toEqual([{ _id: 'effect_evt_x', amount: 7 }]);
  });

  it('two consumers of one message each apply it once', async () => {
    const other = async (session: ClientSession, fresh: Msg[]) => {
      await t.db.collection('other_effects').insertMany(
        fresh.map((m) => ({ _id: m.id as never })),
        { session },
      );
    };
    await t.db.collection('other_effects').deleteMany({});
    await messages.handle('ledger', { id: 'evt_s', amount: 1 }, credit);
    await expect(messages.handle('mailer', { id: 'evt_s', amount: 1 }, other)).resolves.toBe('handled');
    await expect(messages.handle('mailer', { id: 'evt_s', amount: 1 }, other)).resolves.toBe('duplicate');
    expect(await t.db.collection('other_effects').countDocuments()).toBe(1);
    expect(await effects().countDocuments()).toBe(1);
  });

  it('the same message handled by two instances at once: one effect', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, () => messages.handleBatch('ledger', [{ id: 'evt_race', amount: 9 }], credit)),
    );
    expect(results.flatMap((r) => r.handled).length).toBe(1);
    expect(await effects().countDocuments({ _id: 'effect_evt_race' })).toBe(1);
    expect(await inbox().countDocuments()).toBe(1);
  });

  it("the effect's own duplicate key goes to the caller at once, not retried as an inbox race; nothing of the batch commits", async () => {
    await effects().insertOne({ _id: 'effect_evt_dup', amount: 1 });
    await expect(messages.handleBatch('ledger', [{ id: 'evt_dup', amount: 1 }], credit)).rejects.toMatchObject({ code: 11000 });
    // The duplicate key ended the first attempt that reached the insert and was not retried: any attempt
    // before it ended on an injected write conflict (the conflict pass), none after it.
    const last = attempts.at(-1);
    expect(last?.error).toMatchObject({ code: 11000 });
    expect(attempts.slice(0, -1).every((a) => isTransient(a.error))).toBe(true);
    expect(await inbox().countDocuments()).toBe(0);
  });

  it('refuses a consumer name that could collide with another in the inbox id', async () => {
    await expect(messages.handle('a:b', { id: 'evt', amount: 1 }, credit)).rejects.toThrow('Invalid consumer name');
  });
});
