// The port the client keeps its keys behind: operation id -> Idempotency-Key.

/**
 * Where the client keeps the Idempotency-Key of each logical operation, from
 * before its first send until the caller forgets it. A key must outlive the
 * process that minted it (a crash between send and answer is exactly when the
 * retry needs it), so a production store is durable: a file, a database row
 * written in the same transaction as the caller's intent, a queue message.
 *
 * `put` is first-writer-wins: once an operation has a key, it never changes.
 */
export interface KeyStore {
  /** The key stored for the operation, or undefined. */
  get(operationId: string): Promise<string | undefined>;
  /**
   * Stores `key` for the operation unless one is stored already, and resolves
   * with the key that is stored now: `key`, or the one that was there first.
   * Must be durable when it resolves.
   */
  put(operationId: string, key: string): Promise<string>;
  /** Forgets the operation's key (nothing if none). */
  delete(operationId: string): Promise<void>;
}
