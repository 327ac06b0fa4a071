import { describe, expect, it } from '@jest/globals';
import { MongoNetworkTimeoutError, MongoServerError } from 'mongodb';
import type { Connection } from 'mongoose';
import { IdempotentMessages } from '../messages/idempotent-messages.js';
import type { TransactionRunner } from './transaction-runner.js';
import { retryWhileStoreUnavailable } from './boot-retry.js';

/** What an index build meets behind a transaction a killed process left open: the driver's socket timeout. */
const timeout = () => new MongoNetworkTimeoutError('connection 1 to 127.0.0.1:27017 timed out');

/** A step failing with `failures` in turn, then succeeding; counts its runs. */
function stepFailing(failures: Error[]) {
  const step = async () => {
    step.runs += 1;
    const failure = failures.shift();
    if (failure) throw failure;
    return 'built';
  };
  step.runs = 0;
  return step;
}

describe('retryWhileStoreUnavailable: a boot step waits out a store that cannot answer yet', () => {
  it('runs the step again after each timeout until it succeeds, telling each retry', async () => {
    const step = stepFailing([timeout(), timeout()]);
    const retries: number[] = [];
    await expect(retryWhileStoreUnavailable(step, (_, delayMs) => retries.push(delayMs))).resolves.toBe('built');
    expect(step.runs).toBe(3);
    expect(retries).toEqual([250, 500]);
  });

  it('gives up at its deadline with the last error', async () => {
    const step = stepFailing(Array.from({ length: 20 }, timeout));
    await expect(retryWhileStoreUnavailable(step, () => undefined, 600)).rejects.toBeInstanceOf(MongoNetworkTimeoutError);
    expect(step.runs).toBeLessThan(5);
  });

  it('throws any other error at once (a conflicting index is a schema problem, not a wait)', async () => {
    const conflict = new MongoServerError({ code: 85, codeName: 'IndexOptionsConflict', errmsg: 'an index with the same name' });
    const step = stepFailing([conflict]);
    await expect(retryWhileStoreUnavailable(step, () => undefined)).rejects.toBe(conflict);
    expect(step.runs).toBe(1);
  });

  it("IdempotentMessages' boot builds the inbox index through it: a restart after a crash does not fail on the first timeout", async () => {
    const build = stepFailing([timeout()]);
    const connection = { collection: () => ({ createIndex: build }) } as unknown as Connection;
    await new IdempotentMessages({} as TransactionRunner, connection).onModuleInit();
    expect(build.runs).toBe(2);
  });
});
