import { describe, expect, it } from '@jest/globals';
import type { Connection } from 'mongoose';
import type { IdempotencySettings } from '../options.js';
import type { IdempotencyMetrics } from '../ports.js';
import { TransactionRunner } from './transaction-runner.js';

/** A commit whose outcome the driver could not learn, failing at once (as WriteConcernFailed can). */
function unknownCommitResult(): Error {
  return Object.assign(new Error('unknown commit result'), {
    hasErrorLabel: (label: string) => label === 'UnknownTransactionCommitResult',
  });
}

function runnerWith(failingCommits: number) {
  const commits: number[] = [];
  let inTransaction = false;
  const session = {
    startTransaction: () => (inTransaction = true),
    inTransaction: () => inTransaction,
    commitTransaction: async () => {
      commits.push(Date.now());
      if (commits.length <= failingCommits) throw unknownCommitResult();
      inTransaction = false;
    },
    abortTransaction: async () => (inTransaction = false),
    endSession: async () => undefined,
  };
  const retries: string[] = [];
  const connection = { startSession: async () => session } as unknown as Connection;
  const metrics = { transactionRetry: (label: string) => retries.push(label) } as unknown as IdempotencyMetrics;
  const runner = new TransactionRunner(connection, { transactionMaxRetryMs: 5000 } as IdempotencySettings, metrics);
  return { runner, commits, retries };
}

describe('TransactionRunner: an unknown commit result (protocol review 3, L8)', () => {
  it('commits again with backoff, never re-running the body, and counts each retry', async () => {
    const { runner, commits, retries } = runnerWith(6);
    let bodies = 0;
    await expect(runner.run(async () => ++bodies)).resolves.toBe(1);
    expect(bodies).toBe(1);
    expect(commits).toHaveLength(7);
    expect(retries).toEqual(Array(6).fill('UnknownTransactionCommitResult'));
  });

  it('does not spin: a commit that fails at once is retried a bounded number of times before the deadline', async () => {
    const { runner, commits } = runnerWith(Number.POSITIVE_INFINITY);
    const started = Date.now();
    await expect(runner.run(async () => 1)).rejects.toThrow('unknown commit result');
    // A hot loop made hundreds of thousands of commits in 5 s; with 10-100 ms of jittered backoff, at most ~1000.
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    expect(commits.length).toBeLessThan(1500);
  }, 15_000);
});
