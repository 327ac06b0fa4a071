import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { AttemptFailedError, LeaseLostError, RetryLaterError } from '../errors.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { hasLabel, isStoreUnavailable } from '../store/mongo-errors.js';
import { IdempotencyAttempts } from './attempts.js';
import type { IdempotentResponse, Lease } from './record.js';
import type { IdempotentWork } from './work.js';

/** Where a simple-mode record stops: the one recovery point it ever has. */
export const SINGLE_TRANSACTION_POINT = 'completed';

/**
 * Thrown by a simple-mode handler's caller when the request was refused
 * before the handler was entered (a pipe's 400): nothing of the operation
 * began, so the claim is withdrawn - the record deleted - and `refusal`
 * goes on to the app's filters. Stripe saves no result for a request that
 * failed validation; the key stays free for the corrected body. A handler
 * may throw it too, for a refusal it finds before any effect (a limit read
 * in its transaction): its writes roll back and the key stays free.
 */
export class RefusedBeforeWorkError extends Error {
  constructor(readonly refusal: unknown) {
    super('Refused before the handler ran');
    this.name = 'RefusedBeforeWorkError';
  }
}

/**
 * The whole of a simple-mode operation: its database writes, all with
 * `session`, and the answer to store. It may run more than once (the
 * transaction's transient retries, a retry after a crash), never partly.
 */
export type SingleTransactionHandler = (session: ClientSession, lease: Lease) => Promise<IdempotentResponse>;

/**
 * Simple mode as an IdempotentWork: the claim's transaction writes only the
 * record (so a duplicate sees it in flight), then ONE transaction runs the
 * handler and completes the record - the seeds' rule, the record and the
 * business writes commit together. Nothing runs between the two that a
 * crash could leave half done: a dead attempt has written nothing but its
 * claim, and its retry (take over) runs the handler again.
 *
 * An error the handler throws rolls its writes back, then:
 * - retryable (`RetryLaterError`, the `retryable` option's mapping, or a
 *   transient transaction error past its retry budget): 503 + Retry-After,
 *   the lease handed back, the key resumable by the client's retry;
 * - refused before the handler ran (RefusedBeforeWorkError: a pipe's 400):
 *   the claim is withdrawn, no record kept, so any body may use the key next;
 * - anything else: the attempt ends `failed` with nothing stored (a retry of
 *   the same request runs again; another body under the key is 422) and the
 *   error goes on to the app's filters as it is.
 */
@Injectable()
export class SingleTransactionWorks {
  private readonly logger = new Logger(SingleTransactionWorks.name);

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly attempts: IdempotencyAttempts,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  work(handler: SingleTransactionHandler): IdempotentWork {
    return {
      // The claim commits alone: the handler's writes wait for the transaction that completes the record.
      begin: () => Promise.resolve(),
      resume: async (lease) => {
        try {
          return await this.transactions.run(async (session) => {
            const response = await handler(session, lease);
            await this.attempts.complete(session, lease, SINGLE_TRANSACTION_POINT, response);
            return response;
          });
        } catch (error) {
          throw await this.afterFailure(lease, error);
        }
      },
    };
  }

  /**
   * The reaper's reconciler of a simple-mode operation: a stale attempt
   * committed nothing but its claim, so it ends `failed` with nothing stored
   * (a retry runs the request afresh). Fenced: a worker that still runs loses
   * its lease and its transaction aborts.
   */
  async abandon(lease: Lease): Promise<'abandoned'> {
    await this.transactions.run((session) => this.attempts.fail(session, lease, SINGLE_TRANSACTION_POINT, null));
    return 'abandoned';
  }

  /** What the service sees of a failed handler (its writes already rolled back). */
  private async afterFailure(lease: Lease, error: unknown): Promise<unknown> {
    // Its own answers: someone else owns the record now, or the store is down (503 store_unavailable; the lease lapses).
    if (error instanceof RetryLaterError || error instanceof LeaseLostError || isStoreUnavailable(error)) return error;
    if (error instanceof RefusedBeforeWorkError) return this.withdraw(lease, error.refusal);
    const seconds = this.config.retryable(error) ?? (hasLabel(error, 'TransientTransactionError') ? 1 : undefined);
    if (seconds !== undefined) return new RetryLaterError(seconds, undefined, { cause: error });
    try {
      await this.transactions.run((session) => this.attempts.fail(session, lease, SINGLE_TRANSACTION_POINT, null));
    } catch (failure) {
      // Not recorded as failed: the service hands the lease back instead and a retry resumes (runs the handler again).
      this.logger.warn(`Could not end a failed attempt of ${lease.recordId}: ${(failure as Error).message}`);
      return error;
    }
    return new AttemptFailedError(error);
  }

  /**
   * Deletes the record this attempt claimed (fenced on its lease), so the key
   * is unused again. When that fails (the store, a lost lease) the refusal
   * goes on as any failure would: the lease is handed back and the record
   * stays bound to the refused body until it ages out or a retry ends it.
   */
  private async withdraw(lease: Lease, refusal: unknown): Promise<unknown> {
    try {
      if (await this.transactions.run((session) => this.attempts.withdraw(session, lease))) return new AttemptFailedError(refusal);
    } catch (failure) {
      this.logger.warn(`Could not withdraw the refused claim of ${lease.recordId}: ${(failure as Error).message}`);
    }
    return refusal;
  }
}
