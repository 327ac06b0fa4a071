import { createHmac, timingSafeEqual } from 'node:crypto';
import { matchesAnyBody, sameFingerprint, type Fingerprint } from '../protocol/fingerprint.js';
import type { StoredResponseDoc } from '../protocol/record.js';

/**
 * A finished key's answer as Redis keeps it: the stored response still
 * sealed (same cipher, same record id as associated data), the record's
 * fingerprint and its expiry. Redis never holds a body in clear, and every
 * field the service acts on (status, headers, fingerprint, expiry) is
 * authenticated with the record id (Sealer): a writer to Redis cannot turn
 * another body's 422 into a replay, forge a Location or stretch an expiry -
 * a value that does not verify is a miss.
 */
export interface CacheEntry {
  response: StoredResponseDoc;
  fingerprint: Fingerprint;
  expiresAt: number;
  /** When the record finished (ms): replays send it as Idempotent-Original-Date. */
  answeredAt: number;
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
  /** Past the record's expiry: not the cache's to judge (replacement and tombstones are MongoDB's). */
  | 'ask_store';

/**
 * The same judgement as record-decision.ts for a finished record, from its
 * cached copy. An erased record's entries are deleted by the erasure (and
 * cannot be written back: see IdempotencyFastPath), so an entry present is
 * the record's answer.
 */
export function judgeEntry(entry: CacheEntry, fingerprint: Fingerprint, now: Date): CachedDecision {
  if (entry.expiresAt <= now.getTime()) return 'ask_store';
  if (!matchesAnyBody(entry.fingerprint) && !sameFingerprint(entry.fingerprint, fingerprint)) return 'mismatch';
  return 'replay';
}

interface WireBody {
  keyId: string;
  iv: string;
  tag: string;
  data: string;
}

/**
 * The entry format. 3 since issue 48: entries of format 2 include ones 0.1
 * cached before records were checked against the request's tenant (a 0.1
 * record may hold the id another tenant's key has since 0.2); bumping the
 * format drops every one of them at the upgrade, at the cost of one
 * MongoDB read per hot key. Bump it again whenever what an entry vouches
 * for changes.
 */
export const CACHE_ENTRY_FORMAT = 3;

interface WireEntry {
  v: typeof CACHE_ENTRY_FORMAT;
  status: number;
  headers: Record<string, string>;
  schemaVersion: number;
  body: WireBody;
  fp: Fingerprint;
  exp: number;
  at: number;
}

/**
 * Authenticates what the fast path writes to Redis: HMAC-SHA256 over the
 * record id and the exact JSON text, under a key derived from the
 * deployment's digest key. A value is `{mac}.{json}`; the record id binds it
 * to its key (an entry copied onto another key does not verify).
 */
export class Sealer {
  private readonly key: Buffer;

  constructor(digestKey: Buffer) {
    this.key = createHmac('sha256', digestKey).update('idempotency-redis-entry-v2').digest();
  }

  seal(recordId: string, json: string): string {
    return `${this.mac(recordId, json)}.${json}`;
  }

  /** The JSON text, or null when the value was not written by this deployment for this record. */
  open(recordId: string, value: string): string | null {
    const dot = value.indexOf('.');
    if (dot !== 64) return null;
    const json = value.slice(dot + 1);
    const given = Buffer.from(value.slice(0, dot), 'hex');
    const expected = Buffer.from(this.mac(recordId, json), 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected) ? json : null;
  }

  private mac(recordId: string, json: string): string {
    return createHmac('sha256', this.key).update(`${recordId}\n${json}`).digest('hex');
  }
}

export function encodeEntry(entry: CacheEntry): string {
  const { body } = entry.response;
  const wire: WireEntry = {
    v: CACHE_ENTRY_FORMAT,
    status: entry.response.status,
    headers: entry.response.headers,
    schemaVersion: entry.response.schemaVersion,
    body: { keyId: body.keyId, iv: b64(body.iv), tag: b64(body.tag), data: b64(body.data) },
    fp: { algorithm: entry.fingerprint.algorithm, value: entry.fingerprint.value },
    exp: entry.expiresAt,
    at: entry.answeredAt,
  };
  return JSON.stringify(wire);
}

/**
 * null for anything that is not an entry this release wrote (an unknown shape is a miss, never an answer;
 * so is an entry of an earlier format: MongoDB answers it, checking its tenant, and caches it again).
 */
export function decodeEntry(text: string | null): CacheEntry | null {
  if (!text) return null;
  try {
    const wire = JSON.parse(text) as WireEntry;
    if (
      wire.v !== CACHE_ENTRY_FORMAT ||
      typeof wire.status !== 'number' ||
      typeof wire.exp !== 'number' ||
      typeof wire.at !== 'number' ||
      !wire.fp ||
      !wire.body
    )
      return null;
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
      answeredAt: wire.at,
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

function b64(value: Buffer | Uint8Array | { buffer: Uint8Array }): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return Buffer.from(value.buffer).toString('base64');
}
