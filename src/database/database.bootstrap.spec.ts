import { beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Connection } from 'mongoose';
import { DatabaseBootstrap, NotAReplicaSetError } from './database.bootstrap.js';

function fakeConnection(hello: object, built: string[]): Connection {
  const model = (name: string) => ({ createIndexes: async () => void built.push(name) });
  return {
    db: { admin: () => ({ command: async () => hello }) },
    models: { Order: model('Order'), Payment: model('Payment') },
  } as unknown as Connection;
}

describe('DatabaseBootstrap', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('refuses a standalone server with a clear message and builds nothing', async () => {
    const built: string[] = [];
    const bootstrap = new DatabaseBootstrap(fakeConnection({ isWritablePrimary: true }, built));
    await expect(bootstrap.onApplicationBootstrap()).rejects.toThrow(NotAReplicaSetError);
    await expect(bootstrap.onApplicationBootstrap()).rejects.toThrow(/not a replica set/);
    expect(built).toEqual([]);
    expect(bootstrap.indexesReady).toBe(false);
  });

  it("builds every model's indexes on a replica set, then reports ready", async () => {
    const built: string[] = [];
    const bootstrap = new DatabaseBootstrap(fakeConnection({ isWritablePrimary: true, setName: 'rs0' }, built));
    expect(bootstrap.indexesReady).toBe(false);
    await bootstrap.onApplicationBootstrap();
    expect(built).toEqual(['Order', 'Payment']);
    expect(bootstrap.indexesReady).toBe(true);
  });
});
