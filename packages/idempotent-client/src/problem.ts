// An error answer's body: RFC 9457 problem details, with the service's
// stable `code` and the retry guidance every problem carries.

/**
 * An RFC 9457 problem, as far as the client reads it. `retryable`,
 * `reuseKey` and `newKeySafe` are the server's guidance; when a field is
 * absent (an older server) the client falls back on the status code.
 */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  /** Stable machine-readable code: `idempotency_key_in_use`, `payment_provider_unavailable`, ... */
  code?: string;
  /** Sending the same request again (same key, same body) may succeed, after Retry-After when present. */
  retryable?: boolean;
  /** A retry must carry the same Idempotency-Key: a new key could execute the operation twice. */
  reuseKey?: boolean;
  /** Nothing was executed for this request: sending it (or a corrected one) under a new key cannot duplicate an effect. */
  newKeySafe?: boolean;
  [extension: string]: unknown;
}

/** The body as a problem when it is a JSON object; the guidance fields only when they are booleans. */
export function readProblem(body: unknown): Problem | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const problem = { ...(body as Record<string, unknown>) } as Problem;
  for (const field of ['retryable', 'reuseKey', 'newKeySafe'] as const) {
    if (typeof problem[field] !== 'boolean') delete problem[field];
  }
  if (typeof problem.code !== 'string') delete problem.code;
  return problem;
}
