import { Logger, type OnModuleInit, type Provider } from '@nestjs/common';
import { getConnectionToken } from '@nestjs/mongoose';
import type { ClientSession, Connection } from 'mongoose';
import { retryWhileStoreUnavailable } from '../store/boot-retry.js';
import { isDuplicateKey } from '../store/mongo-errors.js';
import { TransactionRunner } from '../store/transaction-runner.js';

/** What the handler needs of a message: its id, the deduplication key (an event id, a `Nats-Msg-Id`). */
export interface InboundMessage {
  id: string;
}

/**
 * The effect of the messages not handled before: database writes only, each
 * with `session`. It commits with their inbox records or not at all, and may
 * run more than once (transient transaction retries), so it has no side
 * effect outside the database.
 */
export type MessageEffect<M extends InboundMessage> = (session: ClientSession, fresh: M[]) => Promise<void>;

export interface MessageBatchOutcome<M extends InboundMessage> {
  /** The messages whose effect committed now. */
  handled: M[];
  /** The messages this consumer had handled before (redeliveries): nothing ran for them. */
  duplicates: M[];
}

/** One inbox record: consumer `consumer` handled message `messageId`. */
interface InboxRecord {
  _id: string;
  consumer: string;
  messageId: string;
  handledAt: Date;
  expiresAt: Date;
}

export interface IdempotentMessagesOptions {
  /** The Mongoose connection the idempotency module uses (its `connectionName`); default the default connection. */
  connectionName?: string;
  /** Default `idempotency_inbox`. */
  collection?: string;
  /**
   * How long an inbox record outlives its message (TTL). It must cover the
   * longest time a transport may deliver a message again: a redelivery after
   * it would run the effect again. Default 30 days.
   */
  retentionSeconds?: number;
}

const DEFAULT_RETENTION_SECONDS = 30 * 24 * 3600;
/** Two instances racing on one message: the loser's insert fails, and the next round sees the winner's record. */
const MAX_ROUNDS = 5;

/**
 * The consumer-side twin of `@Idempotent()`: runs an effect at most once in
 * effect per (consumer, message id), with the inbox record and the effect in
 * one MongoDB transaction. Works with any at-least-once transport (a
 * JetStream pull consumer, an in-process bus, a `@nestjs/microservices`
 * handler, a queue consumer): call it from the transport's handler and ack
 * when it resolves. A batch is recorded in one transaction, so its cost is
 * one transaction per batch, not per message.
 *
 * Register it in the consuming module: `providers: [IdempotentMessages.provider()]`.
 */
export class IdempotentMessages implements OnModuleInit {
  private readonly logger = new Logger(IdempotentMessages.name);
  private readonly retentionSeconds: number;
  private readonly collectionName: string;

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly connection: Connection,
    options: IdempotentMessagesOptions = {},
  ) {
    this.retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    this.collectionName = options.collection ?? 'idempotency_inbox';
    if (!Number.isInteger(this.retentionSeconds) || this.retentionSeconds < 1) throw new Error('retentionSeconds: a whole number from 1');
  }

  /** The Nest provider of an IdempotentMessages on the idempotency module's TransactionRunner (the module must be imported). */
  static provider(options: IdempotentMessagesOptions = {}): Provider {
    return {
      provide: IdempotentMessages,
      inject: [TransactionRunner, getConnectionToken(options.connectionName)],
      useFactory: (transactions: TransactionRunner, connection: Connection) => new IdempotentMessages(transactions, connection, options),
    };
  }

  /**
   * Creates the inbox (collection and TTL index) before the first transaction writes to it; tried again while
   * the store cannot answer (after a crash, the build waits behind the dead process's open transaction).
   */
  async onModuleInit(): Promise<void> {
    await retryWhileStoreUnavailable(
      () => this.inbox().createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 }),
      (error, delayMs) =>
        this.logger.warn(`${this.collectionName} index not built yet (${error.name}: ${error.message}); retrying in ${delayMs} ms`),
    );
  }

  /** One message: `handled` when its effect committed now, `duplicate` when the consumer had handled it before. */
  async handle<M extends InboundMessage>(consumer: string, message: M, effect: MessageEffect<M>): Promise<'handled' | 'duplicate'> {
    const outcome = await this.handleBatch(consumer, [message], effect);
    return outcome.handled.length === 1 ? 'handled' : 'duplicate';
  }

  /**
   * A batch in one transaction: the messages the consumer has no inbox record
   * of are recorded and their effect runs; the others are duplicates. A
   * message id repeated inside the batch counts once. Throws when the
   * transaction fails: nothing of the batch committed, so the transport may
   * deliver it again.
   */
  async handleBatch<M extends InboundMessage>(consumer: string, messages: M[], effect: MessageEffect<M>): Promise<MessageBatchOutcome<M>> {
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(consumer)) throw new Error(`Invalid consumer name ${consumer}`);
    const unique = [...new Map(messages.map((message) => [message.id, message])).values()];
    for (let round = 1; ; round++) {
      try {
        return await this.transactions.run((session) => this.record(session, consumer, unique, effect));
      } catch (error) {
        /*
         * Another instance recorded one of these messages after our read: the next round sees it as a
         * duplicate. Only the inbox's own duplicate key means that; the effect's (a row it writes twice)
         * is the caller's to handle, and would fail the same way every round.
         */
        if (!(error instanceof InboxRace)) throw error;
        if (round >= MAX_ROUNDS) throw error.cause;
        this.logger.debug(`inbox race on a batch of ${consumer}, round ${round}`);
      }
    }
  }

  private async record<M extends InboundMessage>(
    session: ClientSession,
    consumer: string,
    messages: M[],
    effect: MessageEffect<M>,
  ): Promise<MessageBatchOutcome<M>> {
    const ids = messages.map((message) => inboxId(consumer, message.id));
    const seen = new Set(
      (
        await this.inbox()
          .find({ _id: { $in: ids } }, { session, projection: { _id: 1 } })
          .toArray()
      ).map((record) => record._id),
    );
    const handled = messages.filter((message) => !seen.has(inboxId(consumer, message.id)));
    const duplicates = messages.filter((message) => seen.has(inboxId(consumer, message.id)));
    if (handled.length > 0) {
      const handledAt = new Date();
      const expiresAt = new Date(handledAt.getTime() + this.retentionSeconds * 1000);
      const records = handled.map((message) => ({
        _id: inboxId(consumer, message.id),
        consumer,
        messageId: message.id,
        handledAt,
        expiresAt,
      }));
      await this.inbox()
        .insertMany(records, { session, ordered: true })
        .catch((error: unknown) => {
          throw isDuplicateKey(error) ? new InboxRace(error) : error;
        });
      await effect(session, handled);
    }
    return { handled, duplicates };
  }

  private inbox() {
    return this.connection.collection<InboxRecord>(this.collectionName);
  }
}

/** The inbox insert hit another instance's record of a message of the batch: a race a next round resolves. */
class InboxRace extends Error {
  constructor(override readonly cause: unknown) {
    super('an inbox record of the batch was written concurrently', { cause });
    this.name = 'InboxRace';
  }
}

/** The inbox record's id: the same message id under two consumers is two records (each consumer applies it once). */
export function inboxId(consumer: string, messageId: string): string {
  return `${consumer}:${messageId}`;
}
