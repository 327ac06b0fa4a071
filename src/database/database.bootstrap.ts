import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { BOOT_RETRY_DEADLINE_MS, retryWhileStoreUnavailable } from '@idempotent-orders/nest-idempotency';

export class NotAReplicaSetError extends Error {
  constructor() {
    super(
      'MongoDB is neither a replica set nor a sharded cluster that runs transactions: transactions need one. ' +
        'Point MONGODB_URI at a replica set (docker compose up, or mongod --replSet rs0 + rs.initiate()) or a mongos of 4.2+.',
    );
    this.name = 'NotAReplicaSetError';
  }
}

/** Transactions on a sharded cluster need mongos 4.2 (wire version 8); on a replica set, 4.0 (7). */
const SHARDED_TRANSACTIONS_WIRE_VERSION = 8;

/** NamespaceExists: createCollection of a collection that is already there. */
const NAMESPACE_EXISTS = 48;
/** CommandNotFound: a server without `create` (only test emulators; every mongod and mongos has it). */
const COMMAND_NOT_FOUND = 59;

/** Whether the server we talk to can run multi-document transactions: a replica set member, or a mongos of 4.2+. */
export function runsTransactions(hello: { setName?: unknown; msg?: unknown; maxWireVersion?: unknown }): boolean {
  if (typeof hello.setName === 'string') return true;
  return hello.msg === 'isdbgrid' && typeof hello.maxWireVersion === 'number' && hello.maxWireVersion >= SHARDED_TRANSACTIONS_WIRE_VERSION;
}

/**
 * Boot checks: refuse a server that cannot run transactions, then create
 * every collection and build every index the schemas declare. autoIndex and
 * autoCreate are off, so nothing is built behind our back - and nothing is
 * created inside a transaction, which a cross-shard write transaction
 * forbids. Readiness stays down until `indexesReady`.
 */
@Injectable()
export class DatabaseBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(DatabaseBootstrap.name);
  private ready = false;

  constructor(@InjectConnection() private readonly connection: Connection) {}

  get indexesReady(): boolean {
    return this.ready;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.assertTransactional();
    for (const model of Object.values(this.connection.models)) {
      await this.retryingPassingErrors(`the ${model.collection.collectionName} collection and its indexes`, async () => {
        await this.createCollection(model.collection.collectionName);
        await model.createIndexes();
      });
    }
    this.ready = true;
    this.logger.log(`Collections and indexes built for ${Object.keys(this.connection.models).length} collections`);
  }

  /**
   * A build step, run again while the store cannot answer it (after a crash, it waits behind the dead
   * process's open transaction) until the package's boot deadline; any other error (a conflicting index,
   * no rights) ends the boot at once. Both steps are idempotent: an existing collection is accepted, an
   * existing identical index is a no-op.
   */
  private retryingPassingErrors(what: string, step: () => Promise<void>): Promise<void> {
    return retryWhileStoreUnavailable(
      step,
      (error, delayMs) =>
        this.logger.warn(
          `Building ${what} failed (${error.name}: ${error.message}); retrying in ${delayMs} ms. ` +
            'A transaction left open by a process that died holds it until the store gives the transaction up (60 s on mongod).',
        ),
      this.retryDeadlineMs,
    );
  }

  /** BOOT_RETRY_DEADLINE_MS; a test shortens it. */
  protected retryDeadlineMs = BOOT_RETRY_DEADLINE_MS;

  private async assertTransactional(): Promise<void> {
    const hello = await this.connection.db!.admin().command({ hello: 1 });
    if (!runsTransactions(hello)) throw new NotAReplicaSetError();
  }

  private async createCollection(name: string): Promise<void> {
    try {
      await this.connection.db!.createCollection(name);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === NAMESPACE_EXISTS) return;
      if (code !== COMMAND_NOT_FOUND) throw error;
      this.warnNoCreate();
    }
  }

  private warnedNoCreate = false;

  private warnNoCreate(): void {
    if (this.warnedNoCreate) return;
    this.warnedNoCreate = true;
    this.logger.warn('MongoDB has no create command (a test emulator): collections are created by their first write');
  }
}
