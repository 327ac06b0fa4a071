import { Inject, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_CONNECTION } from './schemas.js';
import type { ClientSession, Connection } from 'mongoose';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyMetrics } from '../ports.js';
import { hasLabel, isStoreTimeout } from './mongo-errors.js';

const TRANSIENT = 'TransientTransactionError';
const UNKNOWN_COMMIT = 'UnknownTransactionCommitResult';

/** Snapshot reads, majority + journaled writes: a committed phase survives a failover. */
export const TRANSACTION_OPTIONS = {
  readConcern: { level: 'snapshot' as const },
  writeConcern: { w: 'majority' as const, j: true },
};

type CommitOutcome = 'committed' | 'retry';

/**
 * The only code that starts transactions. `work` gets the session and must
 * pass it to every read and write; it may run more than once (transient
 * errors are retried until `transactionMaxRetryMs`), so it must have no
 * side effect outside the database - never call a payment provider in it.
 * Errors thrown by `work` abort the transaction and surface unchanged.
 *
 * A store that timed out (frozen, overloaded, unreachable) is not retried:
 * each attempt would wait a full timeout again, so the caller gets its 503
 * after one. Nor is its abort awaited - it would wait as long, and the answer
 * does not depend on it: it runs in the background, and the server drops an
 * unfinished transaction on its own anyway.
 */
@Injectable()
export class TransactionRunner {
  constructor(
    @Inject(IDEMPOTENCY_CONNECTION) private readonly connection: Connection,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
    private readonly metrics: IdempotencyMetrics,
  ) {}

  async run<T>(work: (session: ClientSession) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.config.transactionMaxRetryMs;
    const session = await this.connection.startSession();
    try {
      for (let attempt = 1; ; attempt++) {
        session.startTransaction(TRANSACTION_OPTIONS);
        let result: T;
        try {
          result = await work(session);
        } catch (error) {
          if (isStoreTimeout(error)) throw error;
          await abortQuietly(session);
          if (hasLabel(error, TRANSIENT) && Date.now() < deadline) {
            await this.backoff(TRANSIENT, attempt);
            continue;
          }
          throw error;
        }
        if ((await this.commit(session, deadline)) === 'committed') return result;
        await this.backoff(TRANSIENT, attempt);
      }
    } finally {
      if (session.inTransaction()) void abortQuietly(session).finally(() => endQuietly(session));
      else await session.endSession();
    }
  }

  private async commit(session: ClientSession, deadline: number): Promise<CommitOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        await session.commitTransaction();
        return 'committed';
      } catch (error) {
        // Whether a commit that timed out applied is for the client's retry to find out (it resumes).
        if (isStoreTimeout(error)) throw error;
        if (hasLabel(error, UNKNOWN_COMMIT) && Date.now() < deadline) {
          // The commit may or may not have applied; committing again is safe and tells us which. Backed off:
          // an error that comes back at once (WriteConcernFailed, MaxTimeMSExpired) would be a hot loop.
          await this.backoff(UNKNOWN_COMMIT, attempt);
          continue;
        }
        if (hasLabel(error, TRANSIENT) && Date.now() < deadline) {
          await abortQuietly(session);
          return 'retry';
        }
        await abortQuietly(session);
        throw error;
      }
    }
  }

  /** Full jitter, 10 ms -> 100 ms: retries of racing transactions spread out instead of colliding again. */
  private async backoff(label: string, attempt: number): Promise<void> {
    this.metrics.transactionRetry(label);
    const delay = Math.min(100, 5 * 2 ** attempt) * Math.random();
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

async function endQuietly(session: ClientSession): Promise<void> {
  try {
    await session.endSession();
  } catch {
    // Ending a session only returns it to the pool; a store that is down has nothing to learn.
  }
}

async function abortQuietly(session: ClientSession): Promise<void> {
  if (!session.inTransaction()) return;
  try {
    await session.abortTransaction();
  } catch {
    // The server aborts on its own when the transaction times out; nothing to add.
  }
}
