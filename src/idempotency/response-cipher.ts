import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CipherKey } from '../config/configuration.js';
import type { SealedBody } from './idempotency-record.js';

const ALGORITHM = 'aes-256-gcm';

/**
 * AES-256-GCM for stored response bodies (they hold payment data). The key
 * id travels with the ciphertext, so after a rotation the retired key still
 * decrypts what it sealed. The record id is bound in as associated data: a
 * body copied onto another record fails to decrypt.
 */
export class ResponseCipher {
  private readonly keys: Map<string, Buffer>;

  constructor(
    private readonly current: CipherKey,
    all: CipherKey[],
  ) {
    this.keys = new Map(all.map((key) => [key.id, key.key]));
  }

  seal(plaintext: string, recordId: string): SealedBody {
    const iv = randomBytes(12);
    const cipher = createCipheriv(ALGORITHM, this.current.key, iv);
    cipher.setAAD(Buffer.from(recordId, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.current.id, iv, tag: cipher.getAuthTag(), data };
  }

  open(sealed: SealedBody, recordId: string): string {
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new Error(`No decryption key with id "${sealed.keyId}" is configured`);
    const decipher = createDecipheriv(ALGORITHM, key, toBuffer(sealed.iv));
    decipher.setAAD(Buffer.from(recordId, 'utf8'));
    decipher.setAuthTag(toBuffer(sealed.tag));
    return Buffer.concat([decipher.update(toBuffer(sealed.data)), decipher.final()]).toString('utf8');
  }
}

/** lean() hands back BSON Binary for Buffer fields. */
function toBuffer(value: Buffer | { buffer: Uint8Array } | Uint8Array): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value);
  return Buffer.from(value.buffer);
}
