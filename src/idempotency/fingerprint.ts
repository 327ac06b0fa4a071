import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';

/** SHA-256 over the RFC 8785 JSON Canonicalization Scheme: the standard canonical form, by a kept library. */
export const FINGERPRINT_ALGORITHM = 'sha256-jcs-v2';
/** The hand-written canonical JSON of earlier releases: records stored under it are verified until they expire. */
export const LEGACY_FINGERPRINT_ALGORITHM = 'sha256-cjson-v1';

export interface Fingerprint {
  algorithm: string;
  value: string;
}

/** A request's fingerprint, and the same request under an algorithm older records may carry. */
export interface RequestFingerprint extends Fingerprint {
  /** The request's fingerprint under an older algorithm (null for an unknown one), computed only when a record carries it. */
  under(algorithm: string): string | null;
}

/**
 * v1's canonical JSON: object keys sorted, arrays in order, no whitespace,
 * `undefined` members dropped (as JSON.stringify does). Kept only to verify
 * records stored before v2; new records use RFC 8785 (canonicalize).
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
export function fingerprintRequest(method: string, route: string, body: unknown): RequestFingerprint {
  const request = { method: method.toUpperCase(), route, body };
  let legacy: string | undefined;
  return {
    algorithm: FINGERPRINT_ALGORITHM,
    value: sha256(canonicalize(request) ?? 'null'),
    // Lazy: every request would otherwise pay a second canonical form and hash for the rare v1 record.
    under: (algorithm) => (algorithm === LEGACY_FINGERPRINT_ALGORITHM ? (legacy ??= sha256(canonicalJson(request))) : null),
  };
}

/** The part of a request's fingerprint a new record stores. */
export function storedFingerprint(fingerprint: Fingerprint): Fingerprint {
  return { algorithm: fingerprint.algorithm, value: fingerprint.value };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
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

/** Whether a stored fingerprint is this request's, under whichever algorithm it was stored with. */
export function sameFingerprint(stored: Fingerprint, request: Fingerprint | RequestFingerprint): boolean {
  if (stored.algorithm === request.algorithm) return stored.value === request.value;
  return 'under' in request && request.under(stored.algorithm) === stored.value;
}
