import { it } from '@jest/globals';

export type BackendKind = 'uri' | 'mongod' | 'emulator';

export function backendKind(): BackendKind {
  const kind = process.env.TEST_MONGO_BACKEND as BackendKind | undefined;
  if (!kind) throw new Error('TEST_MONGO_BACKEND is not set: run the tests through `npm test` (globalSetup)');
  return kind;
}

export const onEmulator = (): boolean => backendKind() === 'emulator';

/**
 * A test whose meaning needs real storage-engine concurrency (write
 * conflicts between concurrent transactions). It runs on a real mongod
 * (MONGODB_URI or mongodb-memory-server) and is skipped on the emulator,
 * with the reason printed.
 */
export function itRealMongo(name: string, reason: string, fn: () => Promise<void>, timeout?: number): void {
  if (onEmulator()) {
    process.stdout.write(`SKIPPED on the emulator: "${name}" - ${reason}\n`);
    it.skip(`${name} [real mongod only: ${reason}]`, () => undefined);
    return;
  }
  it(name, fn, timeout);
}

