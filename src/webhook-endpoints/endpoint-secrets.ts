import { Inject, Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { idempotencyConfig, type IdempotencyConfig } from '../config/config.tokens.js';
import type { CipherKey } from '../config/configuration.js';
import type { SealedSecret } from './webhook-endpoint.js';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A new signing secret as Standard Webhooks writes one: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Endpoint secrets at rest, sealed as the idempotency package seals stored
 * responses: AES-256-GCM under the same keys (IDEMPOTENCY_ENCRYPTION_KEY and
 * the retired IDEMPOTENCY_DECRYPTION_KEYS), the key id beside the ciphertext
 * so a rotation of the key still opens old secrets, and the endpoint id bound
 * in as associated data so a secret copied onto another endpoint does not
 * open. Written here rather than imported: the package's cipher is not part
 * of its public API.
 */
@Injectable()
export class EndpointSecrets {
  private readonly current: CipherKey;
  private readonly keys: Map<string, Buffer>;

  constructor(@Inject(idempotencyConfig.KEY) config: IdempotencyConfig) {
    this.current = config.encryptionKey;
    this.keys = new Map(config.decryptionKeys.map((key) => [key.id, key.key]));
    this.keys.set(this.current.id, this.current.key);
  }

  /** The key new secrets are sealed under. */
  get currentKeyId(): string {
    return this.current.id;
  }

  seal(secret: string, endpointId: string): SealedSecret {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(endpointId, 'utf8'));
    const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return { keyId: this.current.id, iv, tag: cipher.getAuthTag(), data };
  }

  open(sealed: SealedSecret, endpointId: string): string {
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new Error(`No decryption key with id "${sealed.keyId}" is configured`);
    const decipher = createDecipheriv(ALGORITHM, key, toBuffer(sealed.iv), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(endpointId, 'utf8'));
    decipher.setAuthTag(toBuffer(sealed.tag));
    return Buffer.concat([decipher.update(toBuffer(sealed.data)), decipher.final()]).toString('utf8');
  }

  /** The same secret sealed under the current key (a key rotation: the retired key may then be dropped). */
  reseal(sealed: SealedSecret, endpointId: string): SealedSecret {
    return sealed.keyId === this.current.id ? sealed : this.seal(this.open(sealed, endpointId), endpointId);
  }
}

/** lean() hands back BSON Binary for Buffer fields. */
function toBuffer(value: Buffer | { buffer: Uint8Array } | Uint8Array): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value);
  return Buffer.from(value.buffer);
}
