import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { IsOptional, IsString } from 'class-validator';
import type { Deployment } from './environment.js';

/** The keys that protect what the idempotency records keep: the cipher of stored answers, the HMAC of digests. */
export class KeysEnvironment {
  @IsOptional()
  @IsString()
  IDEMPOTENCY_ENCRYPTION_KEY?: string;

  @IsOptional()
  @IsString()
  IDEMPOTENCY_DECRYPTION_KEYS?: string;

  /** HMAC key of every digest that could name a person (subject digests, erased fingerprints): 32 bytes, base64. */
  @IsOptional()
  @IsString()
  PRIVACY_DIGEST_KEY?: string;
}

export interface CipherKey {
  id: string;
  key: Buffer;
  /** Other ids this key opens: "k1" (every bare key's id before ids were derived) or its derived id. */
  aliases?: string[];
}

/** The idempotency namespace's keys (IdempotencySettings carries them). */
export interface RecordKeys {
  /** Key used to encrypt new stored responses. */
  encryptionKey: CipherKey;
  /** Every key that may decrypt (the current one first). */
  decryptionKeys: CipherKey[];
  usingDevEncryptionKey: boolean;
  /**
   * HMAC key of the digests kept of personal data (subject digests, the
   * fingerprints an erasure leaves, tombstones of erased requests): without
   * it a digest of a guessable id or body is no oracle. Must not change while
   * records and tombstones live (they would no longer be found).
   */
  digestKey: Buffer;
  usingDevDigestKey: boolean;
}

const DEV_ENCRYPTION_KEY = Buffer.alloc(32, 'dev-only-idempotency-key');
const DEV_DIGEST_KEY = Buffer.alloc(32, 'dev-only-privacy-digest-key');

export function recordKeys(env: KeysEnvironment, deployment: Deployment, problems: string[]): RecordKeys {
  const cipherKeys = parseCipherKeys(env, deployment.realStore, problems);
  const digestKey = parseDigestKey(env.PRIVACY_DIGEST_KEY, deployment.realStore, problems);
  return {
    encryptionKey: cipherKeys.current,
    decryptionKeys: cipherKeys.all,
    usingDevEncryptionKey: cipherKeys.dev,
    digestKey: digestKey.key,
    usingDevDigestKey: digestKey.dev,
  };
}

/**
 * IDEMPOTENCY_ENCRYPTION_KEY is `id:base64` or a bare `base64`;
 * IDEMPOTENCY_DECRYPTION_KEYS lists retired keys (`id:base64` or `base64`,
 * comma separated) that may still decrypt records written before a rotation.
 * A bare key's id is derived from its bytes (`keyId`), so two different keys
 * never share an id; ids must be unique. A bare key also opens bodies sealed
 * under "k1" (the id earlier releases gave every bare key), and a named key
 * bodies sealed under its derived id (it was bare before it was retired).
 */
function parseCipherKeys(
  env: KeysEnvironment,
  realStore: string | undefined,
  problems: string[],
): { current: CipherKey; all: CipherKey[]; dev: boolean } {
  const dev = { current: { id: 'dev', key: DEV_ENCRYPTION_KEY }, all: [{ id: 'dev', key: DEV_ENCRYPTION_KEY }], dev: true };
  if (!env.IDEMPOTENCY_ENCRYPTION_KEY) {
    if (realStore) problems.push(`IDEMPOTENCY_ENCRYPTION_KEY: required when ${realStore}`);
    return dev;
  }
  const current = parseCipherKey('IDEMPOTENCY_ENCRYPTION_KEY', env.IDEMPOTENCY_ENCRYPTION_KEY, problems);
  const retired = (env.IDEMPOTENCY_DECRYPTION_KEYS ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => parseCipherKey('IDEMPOTENCY_DECRYPTION_KEYS', part, problems));
  if (!current || retired.some((key) => !key)) return dev;
  const all = [current, ...(retired as CipherKey[])];
  if (realStore && all.some((key) => key.key.equals(DEV_ENCRYPTION_KEY))) {
    problems.push(`IDEMPOTENCY_ENCRYPTION_KEY/IDEMPOTENCY_DECRYPTION_KEYS: the published dev key is refused when ${realStore}`);
    return dev;
  }
  const ids = all.map((key) => key.id);
  const repeated = [...new Set(ids.filter((id, index) => ids.indexOf(id) !== index))];
  if (repeated.length > 0) {
    problems.push(
      `IDEMPOTENCY_ENCRYPTION_KEY/IDEMPOTENCY_DECRYPTION_KEYS: key ids must be unique (repeated: ${repeated.join(', ')}); give a new key a new id, or leave the id out and it is derived from the key`,
    );
    return dev;
  }
  return { current, all, dev: false };
}

/** The id of a key given without one: a digest of the key (public, 48 bits: names the key, reveals nothing of it). */
export function keyId(key: Buffer): string {
  return `h${createHash('sha256').update('idempotency-cipher-key-id\n').update(key).digest('hex').slice(0, 12)}`;
}

function parseCipherKey(name: string, value: string, problems: string[]): CipherKey | undefined {
  const separator = value.indexOf(':');
  const explicitId = separator > 0 ? value.slice(0, separator) : undefined;
  const encoded = separator > 0 ? value.slice(separator + 1) : value;
  const key = Buffer.from(encoded, 'base64');
  if (explicitId !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(explicitId)) {
    problems.push(`${name}: a key id (id:base64) must be 1-32 letters, digits, _ or -`);
    return undefined;
  }
  if (key.length !== 32 || key.toString('base64') !== encoded) {
    problems.push(`${name}: ${explicitId ? `key "${explicitId}"` : 'each key'} must be 32 bytes in base64 (openssl rand -base64 32)`);
    return undefined;
  }
  // Either way the key also opens what it sealed under its other possible name, however a rotation lists it.
  return explicitId ? { id: explicitId, key, aliases: [keyId(key)] } : { id: keyId(key), key, aliases: ['k1'] };
}

/** PRIVACY_DIGEST_KEY: 32 bytes or more in base64; the dev key only where the dev cipher key is allowed too. */
function parseDigestKey(value: string | undefined, realStore: string | undefined, problems: string[]): { key: Buffer; dev: boolean } {
  if (!value) {
    if (realStore) problems.push(`PRIVACY_DIGEST_KEY: required when ${realStore}`);
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  const key = Buffer.from(value, 'base64');
  if (key.length < 32 || key.toString('base64') !== value) {
    problems.push('PRIVACY_DIGEST_KEY: must be at least 32 bytes in base64 (openssl rand -base64 32)');
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  if (realStore && key.equals(DEV_DIGEST_KEY)) {
    problems.push(`PRIVACY_DIGEST_KEY: the published dev key is refused when ${realStore}`);
    return { key: DEV_DIGEST_KEY, dev: true };
  }
  return { key, dev: false };
}
