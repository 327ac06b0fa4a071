import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeMongod, inTransaction, newSessionId, RawClient } from '../../../test/support/fake-mongod.js';
import { SerializingProxy, type SerializingProxyOptions } from '@idempotent-orders/nest-idempotency/embedded-store';

/**
 * The proxy against a peer that records what reaches it: who gets through,
 * in which order, and what a client is answered when the proxy speaks itself.
 */
describe('SerializingProxy', () => {
  let upstream: FakeMongod;
  let proxy: SerializingProxy;
  let logs: string[];
  const clients: RawClient[] = [];

  async function startProxy(options: Partial<SerializingProxyOptions> = {}): Promise<void> {
    proxy = await SerializingProxy.start({
      upstream: { host: '127.0.0.1', port: upstream.port },
      log: (line) => logs.push(line),
      ...options,
    });
  }
  async function client(): Promise<RawClient> {
    const connection = await RawClient.connect(proxy.port);
    clients.push(connection);
    return connection;
  }
  /** Lets in-flight bytes land, then says whether the promise has settled. */
  async function settled(promise: Promise<unknown>): Promise<boolean> {
    let done = false;
    void promise.then(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    return done;
  }

  beforeEach(async () => {
    logs = [];
    upstream = await FakeMongod.start();
  });
  afterEach(async () => {
    clients.splice(0).forEach((connection) => connection.close());
    await proxy.close();
    await upstream.close();
  });

  it('admits one transaction at a time, in arrival order; reads pass at once; a plain write waits its turn', async () => {
    await startProxy();
    const [c1, c2, c3, c4] = [await client(), await client(), await client(), await client()];
    const [s1, s2] = [newSessionId(), newSessionId()];

    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    const second = c2.command({ insert: 'b', ...inTransaction(s2, 1, true) });
    expect(await settled(second)).toBe(false);
    const plainWrite = c3.command({ update: 'c', updates: [] });
    expect(await settled(plainWrite)).toBe(false);
    await expect(c4.command({ find: 'a' })).resolves.toMatchObject({ ok: 1 });

    await c1.command({ commitTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' });
    await second;
    expect(await settled(plainWrite)).toBe(false);
    await c2.command({ commitTransaction: 1, ...inTransaction(s2, 1), $db: 'admin' });
    await plainWrite;

    expect(upstream.names()).toEqual(['insert', 'find', 'commitTransaction', 'insert', 'commitTransaction', 'update']);
    expect(proxy.stats.transactions).toBe(2);
  });

  it('releases the lock on the reply to abortTransaction', async () => {
    await startProxy();
    const [c1, c2] = [await client(), await client()];
    const [s1, s2] = [newSessionId(), newSessionId()];
    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    const second = c2.command({ insert: 'b', ...inTransaction(s2, 1, true) });
    expect(await settled(second)).toBe(false);
    await c1.command({ abortTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' });
    await expect(second).resolves.toMatchObject({ ok: 1 });
  });

  it('aborts a transaction idle past the timeout, upstream too, and answers its zombie NoSuchTransaction', async () => {
    await startProxy({ idleTimeoutMs: 100 });
    const [c1, c2] = [await client(), await client()];
    const [s1, s2] = [newSessionId(), newSessionId()];
    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    await c2.command({ insert: 'b', ...inTransaction(s2, 1, true) });

    expect(proxy.stats.idleAborts).toBe(1);
    // Kept with its time for the test summary, which names the files running then (summary-reporter.cjs).
    expect(proxy.stats.aborts).toEqual([{ at: expect.any(Number), reason: expect.stringMatching(/^idle for \d+ ms$/) }]);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the upstream abort travels on its own connection
    expect(upstream.received.find((command) => 'abortTransaction' in command)).toMatchObject({ lsid: { id: s1 }, autocommit: false });
    await expect(c1.command({ commitTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' })).resolves.toMatchObject({
      ok: 0,
      code: 251,
      codeName: 'NoSuchTransaction',
      errorLabels: ['TransientTransactionError'],
    });
    expect(upstream.names().filter((name) => name === 'commitTransaction')).toEqual([]);
    expect(logs.join('\n')).toMatch(/idle for 100 ms/);
  });

  it('does not take a stalled process for an idle client: the command sent as the stall ends is served', async () => {
    // In Jest the proxy shares its process with the app under test, so a long pause of that process
    // (a major GC of a large heap) stops both; its idle timer then fires before the command that
    // was written as the pause ended is read. CI saw this abort a live transaction.
    await startProxy({ idleTimeoutMs: 100 });
    const c1 = await client();
    const s1 = newSessionId();
    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    const until = Date.now() + 300;
    while (Date.now() < until); // the whole process stalls, well past the idle timeout
    await expect(c1.command({ insert: 'a', ...inTransaction(s1, 1) })).resolves.toMatchObject({ ok: 1 });
    await expect(c1.command({ commitTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' })).resolves.toMatchObject({ ok: 1 });
    expect(proxy.stats.idleAborts).toBe(0);

    // A client that stays silent once the process runs again is still idle.
    await c1.command({ insert: 'a', ...inTransaction(s1, 2, true) });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(proxy.stats.idleAborts).toBe(1);
  });

  it('releases a transaction whose session ends, and one superseded by a newer transaction on its session', async () => {
    await startProxy();
    const [c1, c2, c3] = [await client(), await client(), await client()];
    const [s1, s2] = [newSessionId(), newSessionId()];

    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    const waiting = c2.command({ insert: 'b', ...inTransaction(s2, 1, true) });
    expect(await settled(waiting)).toBe(false);
    await c3.command({ endSessions: [{ id: s1 }], $db: 'admin' });
    await expect(waiting).resolves.toMatchObject({ ok: 1 });

    // s2 holds the lock with txnNumber 1; its next transaction replaces it, as on mongod.
    await c2.command({ insert: 'b', ...inTransaction(s2, 2, true) });
    expect(proxy.stats.supersededAborts).toBe(1);
    await expect(c2.command({ find: 'b', ...inTransaction(s2, 1) })).resolves.toMatchObject({ code: 251 });
  });

  it('injects a write conflict shaped as mongod sends it, aborts that transaction and frees the lock', async () => {
    await startProxy({ writeConflictRate: 0.5, random: () => 0.1 });
    const [c1, c2] = [await client(), await client()];
    const [s1, s2] = [newSessionId(), newSessionId()];

    await expect(c1.command({ find: 'a', ...inTransaction(s1, 1, true) })).resolves.toMatchObject({ ok: 1 });
    const conflict = await c1.command({ update: 'a', updates: [], ...inTransaction(s1, 1) });
    expect(conflict).toEqual({
      ok: 0,
      errmsg: expect.stringMatching(/Write conflict/),
      code: 112,
      codeName: 'WriteConflict',
      errorLabels: ['TransientTransactionError'],
    });
    expect(upstream.names()).not.toContain('update');
    expect(proxy.stats.injectedConflicts).toBe(1);
    // The driver's abort after the error is answered as mongod would; the next transaction runs at once.
    await expect(c1.command({ abortTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' })).resolves.toMatchObject({ code: 251 });
    await expect(c2.command({ find: 'b', ...inTransaction(s2, 1, true) })).resolves.toMatchObject({ ok: 1 });
  });

  it('rewrites hello replies (OP_MSG and the legacy OP_REPLY) to name the proxy and offer no compression', async () => {
    await startProxy();
    const c1 = await client();
    const here = `127.0.0.1:${proxy.port}`;
    for (const hello of [await c1.legacyHello(), await c1.command({ hello: 1, $db: 'admin' })]) {
      expect(hello).toMatchObject({ ok: 1, me: here, primary: here, hosts: [here], setName: 'rs0' });
      expect(hello.compression).toBeUndefined();
    }
    expect(proxy.clientUri(`mongodb://127.0.0.1:${upstream.port}/test?replicaSet=rs0`)).toBe(
      `mongodb://${here}/test?replicaSet=rs0&maxPoolSize=1000`,
    );
  });

  it('warns when a write outside any transaction waits behind one open transaction', async () => {
    await startProxy({ slowWriteWarningMs: 50 });
    const [c1, c2] = [await client(), await client()];
    const s1 = newSessionId();
    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    const write = c2.command({ insert: 'outside', documents: [] });
    expect(await settled(write)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(proxy.stats.slowWriteWarnings).toBe(1);
    expect(logs.join('\n')).toMatch(/WARN a 'insert' outside any transaction waited 50 ms/);
    await c1.command({ commitTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' });
    await expect(write).resolves.toMatchObject({ ok: 1 });
  });

  it('frees the lock of a plain write whose client left while it waited', async () => {
    await startProxy();
    const [c1, c2, c3] = [await client(), await client(), await client()];
    const s1 = newSessionId();
    await c1.command({ insert: 'a', ...inTransaction(s1, 1, true) });
    void c2.command({ insert: 'gone', documents: [] });
    await new Promise((resolve) => setTimeout(resolve, 30));
    c2.close();
    await c1.command({ commitTransaction: 1, ...inTransaction(s1, 1), $db: 'admin' });
    await expect(c3.command({ insert: 'next', ...inTransaction(newSessionId(), 1, true) })).resolves.toMatchObject({ ok: 1 });
  });
});
