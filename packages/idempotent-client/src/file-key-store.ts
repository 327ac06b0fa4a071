import { createHash, randomUUID } from 'node:crypto';
import { link, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeyStore } from './key-store.js';

interface KeyFile {
  operationId: string;
  key: string;
  storedAt: string;
}

/** Filesystems without hard links: publish by rename (atomic, but the last writer wins between processes). */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * A KeyStore on the local disk, one small JSON file per operation in
 * `directory` (named by the SHA-256 of the operation id, so any id is a safe
 * file name). A key is written to a temporary file, fsynced, then published
 * under its final name in one atomic step - a hard link, which unlike a
 * rename never replaces a key that is already there - and the directory is
 * fsynced: a process that crashes at any point leaves either no key or the
 * whole key, never half of one, and the next process (a new client on the
 * same directory) resumes the operation with the same key.
 */
export class FileKeyStore implements KeyStore {
  constructor(private readonly directory: string) {}

  async get(operationId: string): Promise<string | undefined> {
    let text: string;
    try {
      text = await readFile(this.pathOf(operationId), 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    // A file that does not read back is an error, never "no key": minting a new one could run the operation twice.
    const parsed = JSON.parse(text) as Partial<KeyFile>;
    if (parsed.operationId !== operationId || typeof parsed.key !== 'string') {
      throw new Error(`${this.pathOf(operationId)} does not hold the key of operation ${JSON.stringify(operationId)}`);
    }
    return parsed.key;
  }

  async put(operationId: string, key: string): Promise<string> {
    await mkdir(this.directory, { recursive: true });
    const target = this.pathOf(operationId);
    const temp = `${target}.${process.pid}.${randomUUID()}.tmp`;
    const content: KeyFile = { operationId, key, storedAt: new Date().toISOString() };
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(content)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await link(temp, target);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EEXIST') {
        await unlink(temp);
        return (await this.get(operationId)) ?? key;
      }
      if (!NO_LINK.has(code ?? '')) {
        await unlink(temp).catch(() => undefined);
        throw error;
      }
      const existing = await this.get(operationId);
      if (existing !== undefined) {
        await unlink(temp);
        return existing;
      }
      await rename(temp, target);
      await this.syncDirectory();
      return key;
    }
    await unlink(temp);
    await this.syncDirectory();
    return key;
  }

  async delete(operationId: string): Promise<void> {
    try {
      await unlink(this.pathOf(operationId));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return;
      throw error;
    }
    await this.syncDirectory();
  }

  private pathOf(operationId: string): string {
    return join(this.directory, `${createHash('sha256').update(operationId, 'utf8').digest('hex')}.json`);
  }

  /** The new directory entry survives a power loss too (a no-op where directories cannot be fsynced). */
  private async syncDirectory(): Promise<void> {
    try {
      const handle = await open(this.directory, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch {
      // Not every platform can fsync a directory (Windows); the file itself was fsynced.
    }
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}
