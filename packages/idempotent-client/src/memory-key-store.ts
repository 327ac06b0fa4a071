import type { KeyStore } from './key-store.js';

/**
 * A KeyStore in this process's memory: the default, and right only when a
 * lost process may lose its operations with it (tests, a short-lived script
 * whose caller retries the whole script with its own key).
 */
export class MemoryKeyStore implements KeyStore {
  private readonly keys = new Map<string, string>();

  get(operationId: string): Promise<string | undefined> {
    return Promise.resolve(this.keys.get(operationId));
  }

  put(operationId: string, key: string): Promise<string> {
    const existing = this.keys.get(operationId);
    if (existing !== undefined) return Promise.resolve(existing);
    this.keys.set(operationId, key);
    return Promise.resolve(key);
  }

  delete(operationId: string): Promise<void> {
    this.keys.delete(operationId);
    return Promise.resolve();
  }

  /** Number of operations holding a key. */
  get size(): number {
    return this.keys.size;
  }
}
