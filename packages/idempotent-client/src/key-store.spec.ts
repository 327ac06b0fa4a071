import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileKeyStore } from './file-key-store.js';
import type { KeyStore } from './key-store.js';
import { MemoryKeyStore } from './memory-key-store.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'idempotent-client-keys-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.each<[string, () => KeyStore]>([
  ['MemoryKeyStore', () => new MemoryKeyStore()],
  ['FileKeyStore', () => new FileKeyStore(join(tempDir(), 'nested', 'keys'))],
])('%s', (_, makeStore) => {
  it('gets, puts and deletes by operation id', async () => {
    const store = makeStore();
    expect(await store.get('op-1')).toBeUndefined();
    expect(await store.put('op-1', 'key-1')).toBe('key-1');
    expect(await store.get('op-1')).toBe('key-1');
    expect(await store.get('op-2')).toBeUndefined();
    await store.delete('op-1');
    expect(await store.get('op-1')).toBeUndefined();
    await store.delete('op-1');
  });

  it('the first writer wins: a stored key never changes', async () => {
    const store = makeStore();
    await store.put('op-1', 'first');
    expect(await store.put('op-1', 'second')).toBe('first');
    expect(await store.get('op-1')).toBe('first');
  });

  it('of concurrent puts for one operation exactly one key wins, and every caller is told which', async () => {
    const store = makeStore();
    const won = await Promise.all(Array.from({ length: 20 }, (_, i) => store.put('op-race', `key-${i}`)));
    expect(new Set(won).size).toBe(1);
    expect(await store.get('op-race')).toBe(won[0]);
  });

  it('takes any operation id (slashes, dots, unicode)', async () => {
    const store = makeStore();
    for (const id of ['../../etc/passwd', 'conv/1:call.2', 'ümlaut ☃', '']) {
      expect(await store.put(id, `key for ${id}`)).toBe(`key for ${id}`);
      expect(await store.get(id)).toBe(`key for ${id}`);
    }
  });
});

describe('FileKeyStore on disk', () => {
  it('survives a restart: a new store on the same directory reads the key', async () => {
    const dir = tempDir();
    await new FileKeyStore(dir).put('op-1', 'key-1');
    const afterRestart = new FileKeyStore(dir);
    expect(await afterRestart.get('op-1')).toBe('key-1');
    expect(await afterRestart.put('op-1', 'another')).toBe('key-1');
  });

  it('two stores (two processes) on one directory agree on one key', async () => {
    const dir = tempDir();
    const [a, b] = [new FileKeyStore(dir), new FileKeyStore(dir)];
    const won = await Promise.all([a.put('op', 'from-a'), b.put('op', 'from-b'), a.put('op', 'from-a2'), b.put('op', 'from-b2')]);
    expect(new Set(won).size).toBe(1);
  });

  it('leaves one file per operation and no temporary file behind', async () => {
    const dir = tempDir();
    const store = new FileKeyStore(dir);
    await Promise.all([store.put('a', '1'), store.put('a', '2'), store.put('b', '3')]);
    const files = readdirSync(dir);
    expect(files).toHaveLength(2);
    expect(files.every((name) => /^[0-9a-f]{64}\.json$/.test(name))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, files[0]), 'utf8'))).toMatchObject({
      key: expect.any(String),
      operationId: expect.any(String),
    });
  });

  it("ignores a crashed writer's temporary file, and refuses a file it cannot read instead of reporting no key", async () => {
    const dir = tempDir();
    const store = new FileKeyStore(dir);
    await store.put('op', 'key');
    const [file] = readdirSync(dir);
    writeFileSync(join(dir, `${file}.999.crashed.tmp`), '{"operationId":"op","ke');
    expect(await store.get('op')).toBe('key');
    writeFileSync(join(dir, file), '{"operationId":"op","ke');
    await expect(store.get('op')).rejects.toThrow();
    writeFileSync(join(dir, file), JSON.stringify({ operationId: 'other', key: 'k' }));
    await expect(store.get('op')).rejects.toThrow('does not hold the key of operation "op"');
  });
});
