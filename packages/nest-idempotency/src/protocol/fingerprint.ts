import canonicalize from 'canonicalize';
import { createHash, createHmac } from 'node:crypto';
import { IdempotencyError } from '../errors.js';

/**
 * SHA-256 over the RFC 8785 JSON Canonicalization Scheme of `{method, route, body}`:
 * the standard canonical form, by a kept library. The route is the template
 * (`/payments/:id/capture`), so on a route with parameters it does not name
 * the resource: v3 adds them. A request to a route without parameters is
 * still stored under v2 (its v3 form would be the same bytes).
 */
export const FINGERPRINT_ALGORITHM_V2 = 'sha256-jcs-v2';
/**
 * v2 plus the route's resolved parameters (`{method, route, params, body}`):
 * the key is bound to the resource, so a key reused on another payment is
 * 422, never that payment's replay. Records stored under v2 before it keep
 * matching their own requests (the template and body) until they expire.
 */
export const FINGERPRINT_ALGORITHM_V3 = 'sha256-jcs-v3';
/** The algorithm of a request to a route with parameters; one without is stored under v2 (see FINGERPRINT_ALGORITHM_V2). */
export const FINGERPRINT_ALGORITHM = FINGERPRINT_ALGORITHM_V3;
/** The hand-written canonical JSON of earlier releases: records stored under it are verified until they expire. */
export const LEGACY_FINGERPRINT_ALGORITHM = 'sha256-cjson-v1';

export interface Fingerprint {
  algorithm: string;
  value: string;
}

/** A request's fingerprint, and the same request under an algorithm older records may carry. */
export interface RequestFingerprint extends Fingerprint {
  /**
   * The request's fingerprint under another algorithm a record may carry
   * (an older one, or an erased form of either), computed only when a
   * record carries it; null for an unknown one.
   */
  under(algorithm: string): string | null;
}

/**
 * A body the canonical form cannot represent (RFC 8785 refuses non-finite
 * numbers and lone surrogates). The JSON parser refuses such text first
 * (I-JSON, RFC 7493); this keeps any other way in from becoming a 500.
 */
export class BodyNotCanonicalError extends IdempotencyError {
  readonly code = 'body_not_i_json';
  readonly status = 400;
  constructor() {
    super('The body holds a value JSON canonicalization cannot represent (a lone surrogate or a number outside IEEE 754 doubles).');
  }
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

/** The resource a request names: its route template and the parameters the router resolved in it. */
export interface RequestResource {
  route: string;
  /** The path parameters (`{ id: 'pay_123' }`); none for a route without any, or a caller without HTTP. */
  params?: Readonly<Record<string, string>>;
}

/**
 * SHA-256 over method, resource and the body, so a key is bound to one
 * request on one resource. With the deployment's digest key it also
 * matches the erased forms an erasure leaves (erasedFingerprint); without
 * it, never.
 */
export function fingerprintRequest(
  method: string,
  resource: string | RequestResource,
  body: unknown,
  digestKey?: Buffer,
): RequestFingerprint {
  const { route, params } = typeof resource === 'string' ? { route: resource, params: undefined } : resource;
  const v2Form = { method: method.toUpperCase(), route, body };
  const hasParams = params !== undefined && Object.keys(params).length > 0;
  const algorithm = hasParams ? FINGERPRINT_ALGORITHM_V3 : FINGERPRINT_ALGORITHM_V2;
  const value = sha256(canonicalForm(hasParams ? { ...v2Form, params: { ...params } } : v2Form));
  let v2: string | undefined;
  let legacy: string | undefined;
  // Lazy: every request would otherwise pay a second canonical form and hash for the rare older record.
  const plain = (form: string): string | null => {
    if (form === algorithm) return value;
    // Records of a route without parameters are v2; a v3 form of such a request does not exist.
    if (form === FINGERPRINT_ALGORITHM_V2) return (v2 ??= sha256(canonicalForm(v2Form)));
    return form === LEGACY_FINGERPRINT_ALGORITHM ? (legacy ??= sha256(canonicalJson(v2Form))) : null;
  };
  return {
    algorithm,
    value,
    under: (form) => {
      if (!form.startsWith(ERASED_PREFIX)) return plain(form);
      const inner = form.slice(ERASED_PREFIX.length);
      const innerValue = digestKey ? plain(inner) : null;
      return innerValue === null ? null : keyedValue(digestKey!, { algorithm: inner, value: innerValue });
    },
  };
}

function canonicalForm(request: unknown): string {
  try {
    return canonicalize(request) ?? 'null';
  } catch {
    throw new BodyNotCanonicalError();
  }
}

/** The part of a request's fingerprint a new record stores. */
export function storedFingerprint(fingerprint: Fingerprint): Fingerprint {
  return { algorithm: fingerprint.algorithm, value: fingerprint.value };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What the previous release's erasure left in place of a fingerprint: no
 * fingerprint at all, so such a record matches any body. Kept only to read
 * those records until they expire; erasures now keep a keyed fingerprint.
 */
export const ERASED_FINGERPRINT: Fingerprint = { algorithm: 'erased', value: '' };

const ERASED_PREFIX = 'erased-hmac-sha256:';

/**
 * What an erasure leaves in place of a fingerprint: the hash of a body that
 * names the data subject is personal data too (a low-entropy body can be
 * guessed and checked against it), so it becomes an HMAC under the
 * deployment's digest key - no oracle without the key, yet the same request
 * still matches (a late retry is refused, a takeover resumes only the same
 * request) and another body still gets 422.
 */
export function erasedFingerprint(fingerprint: Fingerprint, digestKey: Buffer): Fingerprint {
  if (isErasedFingerprint(fingerprint)) return fingerprint;
  return { algorithm: `${ERASED_PREFIX}${fingerprint.algorithm}`, value: keyedValue(digestKey, fingerprint) };
}

export function isErasedFingerprint(fingerprint: Fingerprint): boolean {
  return fingerprint.algorithm === ERASED_FINGERPRINT.algorithm || fingerprint.algorithm.startsWith(ERASED_PREFIX);
}

/** Only a record the previous release erased matches every body: it kept nothing to compare with. */
export function matchesAnyBody(fingerprint: Fingerprint): boolean {
  return fingerprint.algorithm === ERASED_FINGERPRINT.algorithm;
}

/** Every stored form this request may be found under: each algorithm, plain and erased (tombstone ids). */
export function storedForms(request: RequestFingerprint): Fingerprint[] {
  const forms: Fingerprint[] = [];
  for (const algorithm of [FINGERPRINT_ALGORITHM_V3, FINGERPRINT_ALGORITHM_V2, LEGACY_FINGERPRINT_ALGORITHM]) {
    for (const form of [algorithm, `${ERASED_PREFIX}${algorithm}`]) {
      const value = request.under(form);
      if (value !== null) forms.push({ algorithm: form, value });
    }
  }
  return forms;
}

function keyedValue(digestKey: Buffer, fingerprint: Fingerprint): string {
  return createHmac('sha256', digestKey).update(`fingerprint\n${fingerprint.algorithm}\n${fingerprint.value}`).digest('hex');
}

/** Whether a stored fingerprint is this request's, under whichever algorithm it was stored with. */
export function sameFingerprint(stored: Fingerprint, request: Fingerprint | RequestFingerprint): boolean {
  if (stored.algorithm === request.algorithm) return stored.value === request.value;
  return 'under' in request && request.under(stored.algorithm) === stored.value;
}
