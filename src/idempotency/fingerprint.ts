import { createHash } from 'node:crypto';

export const FINGERPRINT_ALGORITHM = 'sha256-cjson-v1';

export interface Fingerprint {
  algorithm: string;
  value: string;
}

/**
 * Canonical JSON: object keys sorted, arrays in order, no whitespace,
 * `undefined` members dropped (as JSON.stringify does). Two bodies that mean
 * the same thing produce the same string whatever order the client sent.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const encoded = JSON.stringify(value);
    return encoded === undefined ? 'null' : encoded;
  }
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const members = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${members.join(',')}}`;
}

/** SHA-256 over method, route and the validated body, so a key is bound to one request. */
export function fingerprintRequest(method: string, route: string, body: unknown): Fingerprint {
  const canonical = canonicalJson({ method: method.toUpperCase(), route, body });
  return { algorithm: FINGERPRINT_ALGORITHM, value: createHash('sha256').update(canonical).digest('hex') };
}

/**
 * What an erasure leaves in place of a record's fingerprint: the hash of a
 * body that names the data subject is personal data too (a low-entropy body
 * can be guessed and checked against it). Such a record matches any body:
 * it answers with its stored (erased) response whatever is sent.
 */
export const ERASED_FINGERPRINT: Fingerprint = { algorithm: 'erased', value: '' };

export function isErasedFingerprint(fingerprint: Fingerprint): boolean {
  return fingerprint.algorithm === ERASED_FINGERPRINT.algorithm;
}

export function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return a.algorithm === b.algorithm && a.value === b.value;
}
