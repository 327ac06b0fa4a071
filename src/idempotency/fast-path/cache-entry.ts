import { isErasedFingerprint, sameFingerprint, type Fingerprint } from '../fingerprint.js';
import type { StoredResponseDoc } from '../idempotency-record.js';

/**
 * A finished key's answer as Redis keeps it: the stored response still
 * sealed (same cipher, same record id as associated data), the record's
 * fingerprint, its expiry, and the erasure generation of its data subject
 * when it was written. Redis never holds a body in clear.
 */
export interface CacheEntry {
  response: StoredResponseDoc;
  fingerprint: Fingerprint;
  expiresAt: number;
  /** Digest of the data subject of the request that wrote it (null: none). */
  subject: string | null;
  /** The subject's erasure generation when it was written; an erasure bumps it, so older entries are unreadable. */
  generation: number;
}

/** A request in flight elsewhere: written after its claim committed, cleared when its attempt ends. */
export interface InFlightMarker {
  owner: string;
  fingerprint: Fingerprint;
}

/** What a cache entry says about one request. */
export type CachedDecision =
  /** Same request, answered: send the stored response again. */
  | 'replay'
  /** Same key, other body. */
  | 'mismatch'
  /** Not something the cache can judge (expired, or written before an erasure, or for another subject): ask MongoDB. */
  | 'ask_store';

/**
 * The same judgement as record-decision.ts for a finished record, from its
 * cached copy. Anything it cannot vouch for goes to MongoDB: a past-expiry
 * key (replacement and tombstones are MongoDB's), an entry of another data
 * subject (its erasure generation was not read with it), or one an erasure
 * has overtaken.
 */
export function judgeEntry(
  entry: CacheEntry,
  request: { fingerprint: Fingerprint; subject: string | null; generation: number },
  now: Date,
): CachedDecision {
  if (entry.expiresAt <= now.getTime() || request.generation < 0) return 'ask_store';
  if (entry.subject !== request.subject || entry.generation !== request.generation) return 'ask_store';
  if (!isErasedFingerprint(entry.fingerprint) && !sameFingerprint(entry.fingerprint, request.fingerprint)) return 'mismatch';
  return 'replay';
}

interface WireBody {
  keyId: string;
  iv: string;
  tag: string;
  data: string;
}

interface WireEntry {
  v: 1;
  status: number;
  headers: Record<string, string>;
  schemaVersion: number;
  body: WireBody;
  fp: Fingerprint;
  exp: number;
  sub: string | null;
  gen: number;
}

export function encodeEntry(entry: CacheEntry): string {
  const { body } = entry.response;
  const wire: WireEntry = {
    v: 1,
    status: entry.response.status,
    headers: entry.response.headers,
    schemaVersion: entry.response.schemaVersion,
    body: { keyId: body.keyId, iv: b64(body.iv), tag: b64(body.tag), data: b64(body.data) },
    fp: { algorithm: entry.fingerprint.algorithm, value: entry.fingerprint.value },
    exp: entry.expiresAt,
    sub: entry.subject,
    gen: entry.generation,
  };
  return JSON.stringify(wire);
}

/** null for anything that is not an entry this release wrote (an unknown shape is a miss, never an answer). */
export function decodeEntry(text: string | null): CacheEntry | null {
  if (!text) return null;
  try {
    const wire = JSON.parse(text) as WireEntry;
    if (wire.v !== 1 || typeof wire.status !== 'number' || typeof wire.exp !== 'number' || !wire.fp || !wire.body) return null;
    return {
      response: {
        status: wire.status,
        headers: wire.headers,
        schemaVersion: wire.schemaVersion,
        body: {
          keyId: wire.body.keyId,
          iv: Buffer.from(wire.body.iv, 'base64'),
          tag: Buffer.from(wire.body.tag, 'base64'),
          data: Buffer.from(wire.body.data, 'base64'),
        },
      },
      fingerprint: wire.fp,
      expiresAt: wire.exp,
      subject: wire.sub ?? null,
      generation: typeof wire.gen === 'number' ? wire.gen : -1,
    };
  } catch {
    return null;
  }
}

export function encodeMarker(marker: InFlightMarker): string {
  return JSON.stringify({ owner: marker.owner, fp: { algorithm: marker.fingerprint.algorithm, value: marker.fingerprint.value } });
}

export function decodeMarker(text: string | null): InFlightMarker | null {
  if (!text) return null;
  try {
    const wire = JSON.parse(text) as { owner?: unknown; fp?: Fingerprint };
    if (typeof wire.owner !== 'string' || !wire.fp) return null;
    return { owner: wire.owner, fingerprint: wire.fp };
  } catch {
    return null;
  }
}

/** A missing or unreadable generation counter is 0: nothing of that subject was erased since Redis started. */
export function decodeGeneration(text: string | null): number {
  const value = Number(text ?? 0);
  return Number.isSafeInteger(value) ? value : -1;
}

function b64(value: Buffer | Uint8Array | { buffer: Uint8Array }): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return Buffer.from(value.buffer).toString('base64');
}
