import type { Reply } from './http.js';
import type { LostAnswer } from './lossy-proxy.js';

/** What a row saw, enough to judge it without re-running: status, the headers that matter, the first bytes. */
export interface Evidence {
  label: string;
  status?: number;
  headers?: Record<string, string>;
  /** The first bytes of the body, as UTF-8. */
  body?: string;
  bodyBytes?: number;
  error?: string;
}

/** The headers the contract speaks of; the rest (dates, request ids) would only hide them. */
export const SHOWN_HEADERS = ['content-type', 'location', 'idempotent-replayed', 'idempotency-expires', 'retry-after'];
const BODY_PREFIX_BYTES = 200;

export function evidenceOf(label: string, reply: Reply | LostAnswer): Evidence {
  if ('error' in reply) return { label, error: reply.error };
  const headers = Object.fromEntries(
    SHOWN_HEADERS.filter((name) => reply.headers[name] !== undefined).map((name) => [name, reply.headers[name]]),
  );
  if (!('body' in reply)) return { label, status: reply.status, headers };
  return {
    label,
    status: reply.status,
    headers,
    body: reply.body.subarray(0, BODY_PREFIX_BYTES).toString('utf8'),
    bodyBytes: reply.body.length,
  };
}
