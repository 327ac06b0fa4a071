import { Inject, Injectable } from '@nestjs/common';
import { problem, PROBLEM_CONTENT_TYPE } from '../problem.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import type { IdempotencyRecord, IdempotentResponse, StoredResponseDoc, SealedBody } from './record.js';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CipherKey } from '../options.js';

const ERASED_DETAIL = "The original response was erased at the data subject's request; the operation was not repeated.";

/** Stored responses in and out of their encrypted form; the only holder of the cipher. */
@Injectable()
export class StoredResponses {
  private readonly cipher: ResponseCipher;

  constructor(@Inject(IDEMPOTENCY_SETTINGS) config: IdempotencySettings) {
    this.cipher = new ResponseCipher(config.encryptionKey, config.decryptionKeys);
  }

  seal(recordId: string, schemaVersion: number, response: IdempotentResponse): StoredResponseDoc {
    return { status: response.status, headers: response.headers, body: this.cipher.seal(response.body, recordId), schemaVersion };
  }

  open(record: Pick<IdempotencyRecord, '_id' | 'response'>): IdempotentResponse {
    const stored = record.response!;
    return { status: stored.status, headers: stored.headers, body: this.cipher.open(stored.body, record._id) };
  }

  /** What replaces a stored response after erasure: a final 410, so a retry still never re-executes. */
  erased(record: IdempotencyRecord): StoredResponseDoc {
    return this.seal(record._id, record.schemaVersion, erasedResponse());
  }
}

/** The answer for a key whose data subject was erased. */
export function erasedResponse(): IdempotentResponse {
  const body = JSON.stringify(problem(410, 'response_erased', ERASED_DETAIL));
  return { status: 410, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body };
}

const ALGORITHM = 'aes-256-gcm';
/** GCM's recommended 96-bit IV, and its full 128-bit tag: nothing else is ever sealed, so nothing else may open. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM for stored response bodies (they hold payment data). The key
 * id travels with the ciphertext, so after a rotation the retired key still
 * decrypts what it sealed. The record id is bound in as associated data: a
 * body copied onto another record fails to decrypt.
 *
 * Key ids are unique (two keys under one id meant the last one won, and every
 * body the other sealed failed to open). A key may also answer to legacy ids
 * (`aliases`: bodies sealed under "k1" by releases that named every bare key
 * so, including those the duplicate-id bug sealed with the wrong "k1"). The
 * key that has an id is tried first, then the keys that answer to it: GCM's
 * tag says which one sealed the body.
 */
export class ResponseCipher {
  private readonly keys = new Map<string, Buffer[]>();

  constructor(
    private readonly current: CipherKey,
    all: CipherKey[],
  ) {
    for (const key of all) {
      if (this.keys.has(key.id)) throw new Error(`Two decryption keys share the id "${key.id}"`);
      this.keys.set(key.id, [key.key]);
    }
    if (!this.keys.has(current.id)) throw new Error(`The current key "${current.id}" is not among the decryption keys`);
    // After the key that has the id, the keys that merely answer to it (tried in that order).
    for (const key of all) {
      for (const alias of key.aliases ?? []) {
        const keys = this.keys.get(alias) ?? [];
        if (!keys.includes(key.key)) this.keys.set(alias, [...keys, key.key]);
      }
    }
  }

  seal(plaintext: string, recordId: string): SealedBody {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(recordId, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.current.id, iv, tag: cipher.getAuthTag(), data };
  }

  open(sealed: SealedBody, recordId: string): string {
    const candidates = this.keys.get(sealed.keyId);
    if (!candidates) throw new Error(`No decryption key with id "${sealed.keyId}" is configured`);
    const iv = toBuffer(sealed.iv);
    const tag = toBuffer(sealed.tag);
    // A truncated tag makes forgery a 2^32 problem instead of 2^128; GCM with another IV length is not what we seal.
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('Malformed sealed body (IV or tag length)');
    let failure: unknown;
    for (const key of candidates) {
      try {
        const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(recordId, 'utf8'));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(toBuffer(sealed.data)), decipher.final()]).toString('utf8');
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }
}

/** lean() hands back BSON Binary for Buffer fields. */
function toBuffer(value: Buffer | { buffer: Uint8Array } | Uint8Array): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value);
  return Buffer.from(value.buffer);
}
