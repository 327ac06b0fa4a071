import { beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { MongoNetworkTimeoutError, MongoServerError } from 'mongodb';
import type { Connection } from 'mongoose';
import { DatabaseBootstrap, NotAReplicaSetError, runsTransactions } from './database.bootstrap.js';

/** `failures` errors thrown by the first index builds, in turn, before they succeed. */
function fakeConnection(hello: object, built: string[], existing: string[] = [], failures: Error[] = []): Connection {
  const model = (name: string, collectionName: string) => ({
    collection: { collectionName },
    createIndexes: async () => {
      const failure = failures.shift();
      if (failure) throw failure;
      built.push(`index ${name}`);
    },
  });
  return {
    db: {
      admin: () => ({ command: async () => hello }),
      createCollection: async (name: string) => {
        if (existing.includes(name)) throw Object.assign(new Error(`Collection ${name} already exists`), { code: 48 });
        built.push(`create ${name}`);
        existing.push(name);
      },
    },
    models: { Order: model('Order', 'orders'), Payment: model('Payment', 'payments') },
  } as unknown as Connection;
}

describe('DatabaseBootstrap', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('refuses a standalone server with a clear message and builds nothing', async () => {
    const built: string[] = [];
    const bootstrap = new DatabaseBootstrap(fakeConnection({ isWritablePrimary: true }, built));
    await expect(bootstrap.onApplicationBootstrap()).rejects.toThrow(NotAReplicaSetError);
    await expect(bootstrap.onApplicationBootstrap()).rejects.toThrow(/neither a replica set nor a sharded cluster/);
    expect(built).toEqual([]);
    expect(bootstrap.indexesReady).toBe(false);
  });

  it("creates every collection (outside any transaction) and builds every model's indexes, then reports ready", async () => {
    const built: string[] = [];
    const bootstrap = new DatabaseBootstrap(fakeConnection({ isWritablePrimary: true, setName: 'rs0' }, built, ['payments']));
    expect(bootstrap.indexesReady).toBe(false);
    await bootstrap.onApplicationBootstrap();
    expect(built).toEqual(['create orders', 'index Order', 'index Payment']);
    expect(bootstrap.indexesReady).toBe(true);
  });

  it('accepts a mongos that runs transactions (4.2+), not an older one (protocol review 3, M4)', async () => {
    expect(runsTransactions({ msg: 'isdbgrid', maxWireVersion: 25 })).toBe(true);
    expect(runsTransactions({ msg: 'isdbgrid', maxWireVersion: 7 })).toBe(false);
    expect(runsTransactions({ setName: 'rs0', maxWireVersion: 25 })).toBe(true);
    expect(runsTransactions({ maxWireVersion: 25 })).toBe(false);
    const built: string[] = [];
    await new DatabaseBootstrap(fakeConnection({ msg: 'isdbgrid', maxWireVersion: 25 }, built)).onApplicationBootstrap();
    expect(built).toHaveLength(4);
  });

  describe('a build step that meets a passing store error', () => {
    const timeout = () => new MongoNetworkTimeoutError('connection 3 to 127.0.0.1:27017 timed out');
    const replicaSet = { isWritablePrimary: true, setName: 'rs0' };

    it('is run again until it succeeds: a transaction left open by a killed process ends, and the boot goes on', async () => {
      const built: string[] = [];
      const bootstrap = new DatabaseBootstrap(fakeConnection(replicaSet, built, [], [timeout(), timeout()]));
      await bootstrap.onApplicationBootstrap();
      expect(built).toEqual(['create orders', 'index Order', 'create payments', 'index Payment']);
      expect(bootstrap.indexesReady).toBe(true);
    });

    it('is given up at the deadline: the boot fails with the last error, not ready', async () => {
      const built: string[] = [];
      const bootstrap = new DatabaseBootstrap(fakeConnection(replicaSet, built, [], Array.from({ length: 20 }, timeout)));
      (bootstrap as unknown as { retryDeadlineMs: number }).retryDeadlineMs = 600;
      await expect(bootstrap.onApplicationBootstrap()).rejects.toBeInstanceOf(MongoNetworkTimeoutError);
      expect(bootstrap.indexesReady).toBe(false);
    });

    it('any other error ends the boot at once (a conflicting index is a schema problem, not a wait)', async () => {
      const built: string[] = [];
      const conflict = new MongoServerError({ code: 85, codeName: 'IndexOptionsConflict', errmsg: 'an index with the same name' });
      const failures: Error[] = [conflict, timeout()];
      const bootstrap = new DatabaseBootstrap(fakeConnection(replicaSet, built, [], failures));
      await expect(bootstrap.onApplicationBootstrap()).rejects.toBe(conflict);
      expect(failures).toHaveLength(1);
      expect(built).toEqual(['create orders']);
    });
  });
});
