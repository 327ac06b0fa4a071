/**
 * `npm run store`: the embedded store as a process of its own. A service
 * started without MONGODB_URI finds it through .data/embedded-store.json and
 * uses it, so what one run of the service wrote is there for the next run;
 * once the store stops, the file is gone and a service starts its own again.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { findSharedStore, SHARED_STORE_FILE } from '../embedded-mongo.js';

const CLI = fileURLToPath(new URL('../../../dist/src/database/embedded/store.cli.js', import.meta.url));

describe('npm run store: the embedded store outlives restarts of the service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shared-store-'));
  const file = join(dir, SHARED_STORE_FILE);
  let store: ChildProcess | undefined;

  afterAll(() => {
    if (store && store.exitCode === null) store.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('names its URI in the file while it runs, keeps the data across clients, and takes the file away when stopped', async () => {
    if (!existsSync(CLI)) throw new Error('dist/src/database/embedded/store.cli.js is missing: npm run build first (npm test does)');
    const env = { ...process.env };
    delete env.MONGODB_URI;
    store = spawn(process.execPath, [CLI], { cwd: dir, env: { ...env, MONGO_BACKEND: 'emulator' }, stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      store!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Embedded store ready')) resolve();
      });
      store!.once('exit', (code) => reject(new Error(`the store exited early (${code}): ${out}`)));
    });

    const shared = findSharedStore(file);
    expect(shared).toMatchObject({ pid: store.pid, kind: 'emulator' });

    // First "run of the service": writes an order and goes away.
    const first = await MongoClient.connect(shared!.uri);
    await first
      .db('orders_test_shared')
      .collection('orders')
      .insertOne({ _id: 'ord_kept' as never, state: 'saved' });
    await first.close();
    // The next run finds the store again through the file, and the order in it.
    const second = await MongoClient.connect(findSharedStore(file)!.uri);
    expect(
      await second
        .db('orders_test_shared')
        .collection('orders')
        .findOne({ _id: 'ord_kept' as never }),
    ).toMatchObject({ state: 'saved' });
    await second.close();

    const exited = new Promise((resolve) => store!.once('exit', resolve));
    store.kill('SIGTERM');
    await exited;
    expect(existsSync(file)).toBe(false);
    expect(findSharedStore(file)).toBeUndefined();
  });

  it('ignores a file whose store process is gone (a store killed without cleanup), and no file at all', async () => {
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => dead.once('exit', resolve));
    const stale = join(dir, 'stale.json');
    writeFileSync(stale, JSON.stringify({ uri: 'mongodb://127.0.0.1:1/', pid: dead.pid, description: 'gone', kind: 'emulator' }));
    expect(findSharedStore(stale)).toBeUndefined();
    expect(findSharedStore(join(dir, 'no-such-file.json'))).toBeUndefined();
  });
});
