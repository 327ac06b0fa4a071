import { beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Connection } from 'mongoose';
import { DatabaseBootstrap, NotAReplicaSetError, runsTransactions } from './database.bootstrap.js';

function fakeConnection(hello: object, built: string[], existing: string[] = []): Connection {
  const model = (name: string, collectionName: string) => ({
    collection: { collectionName },
    createIndexes: async () => void built.push(`index ${name}`),
  });
  return {
    db: {
      admin: () => ({ command: async () => hello }),
      createCollection: async (name: string) => {
        if (existing.includes(name)) throw Object.assign(new Error(`Collection ${name} already exists`), { code: 48 });
        built.push(`create ${name}`);
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
});
