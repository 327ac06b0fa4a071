import type { MongoBackendKind as BackendKind } from '../../src/database/embedded-mongo.js';

export function backendKind(): BackendKind {
  const kind = process.env.TEST_MONGO_BACKEND as BackendKind | undefined;
  if (!kind) throw new Error('TEST_MONGO_BACKEND is not set: run the tests through `npm test` (globalSetup)');
  return kind;
}

export const onEmulator = (): boolean => backendKind() === 'emulator';

/** The emulator's own address, past the serializing proxy (emulator backend only). */
export const unserializedEmulatorUri = (): string | undefined => process.env.TEST_MONGO_UNSERIALIZED_URI;
