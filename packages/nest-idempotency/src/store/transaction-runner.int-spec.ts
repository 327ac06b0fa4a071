import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { hasLabel } from './mongo-errors.js';
import type { Collection } from 'mongodb';
import { onEmulator, startModuleApp, type ModuleApp } from '../../test/support/module-app.js';
import { TransactionRunner } from './transaction-runner.js';

/** A MongoServerError look-alike carrying a label, as the driver raises them. */
function labelled(label: string): Error {
  return Object.assign(new Error(`simulated ${label}`), { hasErrorLabel: (name: string) => name === label });
}

describe("TransactionRunner (integration, on the run's replica set)", () => {
  let t: ModuleApp;
  let runner: TransactionRunner;
  let things: Collection<{ _id: string; n?: number }>;

  beforeAll(async () => {
    t = await startModuleApp({ dbName: 'test_transactions', options: { transactionMaxRetryMs: 300 } });
    runner = t.app.get(TransactionRunner);
    things = t.db.collection('things');
  });
  beforeEach(async () => {
    await things.deleteMany({});
  });
  afterAll(async () => t.close());

  it('commits every write made with the session', async () => {
    const result = await runner.run(async (session) => {
      await things.insertOne({ _id: 'a' }, { session });
      await things.insertOne({ _id: 'b' }, { session });
      return 'done';
    });
    expect(result).toBe('done');
    expect(await things.countDocuments()).toBe(2);
  });

  it('rolls back every write when the work throws, and surfaces the very same error', async () => {
    const failure = new Error('business rule broken');
    await expect(
      runner.run(async (session) => {
        await things.insertOne({ _id: 'a' }, { session });
        await things.updateOne({ _id: 'a' }, { $set: { n: 1 } }, { session });
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await things.countDocuments()).toBe(0);
  });

  it('a write without the session is not part of the transaction: it survives the abort (so never do it)', async () => {
    // On the serialized emulator this write waits for the open transaction, which waits for it, until the
    // proxy's idle timeout aborts the transaction: the proxy's WARN line names the hazard.
    await expect(
      runner.run(async (session) => {
        await things.insertOne({ _id: 'inside' }, { session });
        await things.insertOne({ _id: 'outside' });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(
      await things
        .find()
        .map((doc) => doc._id)
        .toArray(),
    ).toEqual(['outside']);
  });

  it('rolls back on a duplicate key inside the transaction', async () => {
    await things.insertOne({ _id: 'taken' });
    await expect(
      runner.run(async (session) => {
        await things.insertOne({ _id: 'new' }, { session });
        await things.insertOne({ _id: 'taken' }, { session });
      }),
    ).rejects.toMatchObject({ code: 11000 });
    expect(await things.countDocuments({ _id: 'new' })).toBe(0);
  });

  it('retries TransientTransactionError from a fresh start, committing once', async () => {
    let runs = 0;
    let thrown = 0;
    await runner.run(async (session) => {
      runs++;
      await things.insertOne({ _id: `run-${runs}` }, { session });
      if (thrown < 2) {
        thrown++;
        throw labelled('TransientTransactionError');
      }
    });
    expect(thrown).toBe(2);
    // Under `npm run test:conflicts` an injected WriteConflict on the insert is one more (genuine) retry.
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(
      await things
        .find()
        .map((doc) => doc._id)
        .toArray(),
    ).toEqual([`run-${runs}`]);
  });

  it('gives up after TRANSACTION_MAX_RETRY_MS and surfaces the transient error', async () => {
    const started = Date.now();
    await expect(
      runner.run(async () => {
        throw labelled('TransientTransactionError');
      }),
    ).rejects.toThrow('simulated TransientTransactionError');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('does not retry other errors', async () => {
    let runs = 0;
    await expect(
      runner.run(async () => {
        runs++;
        throw labelled('SomethingElse');
      }),
    ).rejects.toThrow();
    expect(runs).toBe(1);
  });

  it('does not retry a store that timed out, and answers without waiting for the abort', async () => {
    // What the driver raises when a frozen server never replies: a network timeout, labelled transient.
    const timeout = Object.assign(labelled('TransientTransactionError'), { name: 'MongoNetworkTimeoutError' });
    let runs = 0;
    let timeouts = 0;
    await expect(
      runner.run(async (session) => {
        runs++;
        await things.insertOne({ _id: `timed-out-${runs}` }, { session });
        timeouts++;
        throw timeout;
      }),
    ).rejects.toBe(timeout);
    // Once the store timed out the runner gives up. (Under `npm run test:conflicts` an injected WriteConflict
    // on the insert is a genuine retry before the timeout, so the body may have started more than once.)
    expect(timeouts).toBe(1);
    // The abort ran in the background; the write is rolled back all the same.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await things.countDocuments()).toBe(0);
  });

  /**
   * 8 read-modify-write transactions on one counter at once; returns how many times their bodies ran and how
   * many committed. This file's retry budget is 300 ms (for the give-up test): with injected write conflicts
   * (test:conflicts) a transaction queued behind the others can run out of it and surface its transient error.
   */
  const raceOnOneDocument = async (): Promise<{ runs: number; committed: number }> => {
    await things.insertOne({ _id: 'counter', n: 0 });
    let runs = 0;
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        runner.run(async (session) => {
          runs++;
          const doc = await things.findOne({ _id: 'counter' }, { session });
          await new Promise((resolve) => setTimeout(resolve, 20));
          await things.updateOne({ _id: 'counter' }, { $set: { n: (doc!.n ?? 0) + 1 } }, { session });
        }),
      ),
    );
    for (const result of results) {
      if (result.status === 'rejected') expect(hasLabel(result.reason, 'TransientTransactionError')).toBe(true);
    }
    return { runs, committed: results.filter((result) => result.status === 'fulfilled').length };
  };

  it('concurrent transactions on one document: no update is lost', async () => {
    const { committed } = await raceOnOneDocument();
    // Every committed increment is there (the emulator's lost update would leave fewer); only an injected
    // conflict past the budget may fail one, and it then changed nothing.
    expect(committed).toBeGreaterThan(0);
    if (!process.env.EMULATOR_WRITE_CONFLICT_RATE) expect(committed).toBe(8);
    expect((await things.findOne({ _id: 'counter' }))!.n).toBe(committed);
  });

  // The serialized emulator admits one transaction at a time, so these never conflict there (injected conflicts
  // are random: they cannot make this deterministic). On a real engine the losers must have run again.
  const noConflicts = 'the serialized emulator runs one transaction at a time: there is no write conflict to retry';
  (onEmulator() ? it.skip : it)(
    `concurrent transactions on one document: the losers retry on the write conflict${onEmulator() ? ` (SKIPPED: ${noConflicts})` : ''}`,
    async () => {
      const { runs, committed } = await raceOnOneDocument();
      expect(committed).toBe(8);
      expect(runs).toBeGreaterThan(8);
      expect((await things.findOne({ _id: 'counter' }))!.n).toBe(8);
    },
  );
  if (onEmulator()) process.stdout.write(`SKIPPED on the emulator: "the losers retry on the write conflict" - ${noConflicts}\n`);
});
