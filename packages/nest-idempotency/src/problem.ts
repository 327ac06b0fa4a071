/** RFC 9457 problem details, with a stable machine-readable `code` and what the client may do next. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** The same request (same key, same body) may succeed if sent again, after Retry-After when present. */
  retryable: boolean;
  /** A retry must carry the same Idempotency-Key: under a new key the operation could run twice. */
  reuseKey: boolean;
  /** The server knows nothing was executed for this request: a new key cannot duplicate an effect. */
  newKeySafe: boolean;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * What a client may do after a problem of one `code`. `retryAfterSeconds`
 * is the Retry-After sent when the error names none of its own (every
 * retryable answer carries one).
 */
export interface ProblemGuidance {
  retryable: boolean;
  reuseKey: boolean;
  newKeySafe: boolean;
  retryAfterSeconds?: number;
}

/** Refused before anything ran, and the same request would be refused again: fix it; any key is safe. */
const REFUSED: ProblemGuidance = { retryable: false, reuseKey: false, newKeySafe: true };
/** Send the same request again with the same key, after Retry-After: it may have run, or may still be running. */
const RETRY_SAME_KEY = (retryAfterSeconds: number): ProblemGuidance => ({
  retryable: true,
  reuseKey: true,
  newKeySafe: false,
  retryAfterSeconds,
});
/** Final: the request was answered before (or its answer is gone); neither a retry nor a new key is safe to assume. */
const ANSWERED: ProblemGuidance = { retryable: false, reuseKey: false, newKeySafe: false };

/**
 * The package's own codes. One table: an app adds its codes with
 * registerProblemGuidance(), and problem() writes the three fields into
 * every problem+json from them.
 */
export const IDEMPOTENCY_PROBLEM_GUIDANCE: Readonly<Record<string, ProblemGuidance>> = Object.freeze({
  idempotency_key_missing: REFUSED,
  idempotency_key_invalid: REFUSED,
  body_not_i_json: REFUSED,
  // Another body under this key: this request never ran (the key belongs to the other one). A new key is how to send it.
  idempotency_key_reused: REFUSED,
  // Still running: the same key gets its answer; a new key would run it a second time.
  idempotency_key_in_use: RETRY_SAME_KEY(1),
  // Done before and forgotten: Location names what was done. Repeating it needs a new key, and is a second execution.
  idempotency_key_expired: ANSWERED,
  // The stored answer was erased; the operation ran and is never repeated under this key.
  response_erased: ANSWERED,
  // May fail after the work began (a write after the charge): only the same key resumes it.
  store_unavailable: RETRY_SAME_KEY(2),
  // A simple-mode handler's RetryLaterError (or the `retryable` option's mapping): nothing kept, the same key runs it again.
  retry_later: RETRY_SAME_KEY(1),
  // The erasure (no Idempotency-Key; repeating it is safe): it may have committed already, Redis not yet told.
  cache_invalidation_failed: { retryable: true, reuseKey: false, newKeySafe: false, retryAfterSeconds: 2 },
  // The erasure or cancel refused before anything changed (Redis could not be told first): repeating it is safe.
  cache_unavailable: { retryable: true, reuseKey: false, newKeySafe: false, retryAfterSeconds: 2 },
  // The admin API (no Idempotency-Key): look-ups and a release refused before anything changed.
  idempotency_key_not_found: REFUSED,
  idempotency_operation_required: REFUSED,
  idempotency_lease_active: { retryable: true, reuseKey: false, newKeySafe: true, retryAfterSeconds: 1 },
  // The duplicate guard: this body was sent under another key moments ago (Location, or Retry-After while in flight).
  // Nothing ran for this request, but a new key would not be safe either: only Idempotency-Intent: new means a second one.
  possible_duplicate: ANSWERED,
  idempotency_intent_invalid: REFUSED,
  // The key was canceled (its effect undone, or it never ran): nothing runs under it again. Whether a new key is
  // safe is the client's call - the cancel may have undone what the client wanted, or only a duplicate of it.
  idempotency_key_canceled: ANSWERED,
});

const registered = new Map<string, ProblemGuidance>(Object.entries(IDEMPOTENCY_PROBLEM_GUIDANCE));

/**
 * Adds an app's codes to the guidance table. A code already there with
 * other guidance is refused (two meanings for one code is a bug).
 */
export function registerProblemGuidance(table: Readonly<Record<string, ProblemGuidance>>): void {
  for (const [code, guidance] of Object.entries(table)) {
    const known = registered.get(code);
    if (known && !sameGuidance(known, guidance)) throw new Error(`Problem code "${code}" already has other guidance`);
    const { retryable, reuseKey, newKeySafe, retryAfterSeconds } = guidance;
    registered.set(code, { retryable, reuseKey, newKeySafe, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) });
  }
}

/** The guidance of a code, or undefined when no table names it. */
export function guidanceFor(code: string): ProblemGuidance | undefined {
  return registered.get(code);
}

/** Every code with guidance (the package's and those registered). */
export function guidedCodes(): string[] {
  return [...registered.keys()];
}

const RETRYABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * A code no table names (a test enumerates the tables so none is missed):
 * the cautious reading of its status - retry the same key where a retry is
 * meant, never claim a new key is safe.
 */
function fallbackGuidance(status: number): ProblemGuidance {
  const retryable = RETRYABLE_STATUSES.has(status);
  return { retryable, reuseKey: retryable || status >= 500, newKeySafe: false, ...(retryable ? { retryAfterSeconds: 1 } : {}) };
}

/** The guidance problem() writes for a code (its table entry, else the cautious reading of its status). */
export function problemGuidance(status: number, code: string): ProblemGuidance {
  return registered.get(code) ?? fallbackGuidance(status);
}

/** Retry-After for an answer: the error's own value, else the table's default when a retry is meant. */
export function retryAfterHeader(status: number, code: string, seconds?: number): Record<string, string> {
  const value = seconds ?? problemGuidance(status, code).retryAfterSeconds;
  return value ? { 'retry-after': String(value) } : {};
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/** Where the `type` URIs of the package's problems live unless the option `problemTypeBaseUrl` says otherwise. */
export const DEFAULT_PROBLEM_TYPE_BASE_URL = 'https://errors.example.com/';

let problemTypeBaseUrl = DEFAULT_PROBLEM_TYPE_BASE_URL;

/**
 * Sets the base of every problem `type` (`{base}{code with '-'}`): the
 * module does it at boot from the option `problemTypeBaseUrl`. One per
 * process, as the guidance table is: problems are written by free functions
 * (a stored 410, a tombstone's answer) with no injector at hand.
 */
export function setProblemTypeBaseUrl(base: string): void {
  problemTypeBaseUrl = base;
}

/**
 * A problem document. The guidance fields come from the table and follow
 * `code`; an extension cannot override them.
 */
export function problem(status: number, code: string, detail: string, extensions: Record<string, unknown> = {}): Problem {
  const { retryable, reuseKey, newKeySafe } = problemGuidance(status, code);
  const guidance = { retryable, reuseKey, newKeySafe };
  return {
    type: `${problemTypeBaseUrl}${code.replace(/_/g, '-')}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    ...guidance,
    ...extensions,
    ...guidance,
  };
}

function sameGuidance(a: ProblemGuidance, b: ProblemGuidance): boolean {
  return (
    a.retryable === b.retryable && a.reuseKey === b.reuseKey && a.newKeySafe === b.newKeySafe && a.retryAfterSeconds === b.retryAfterSeconds
  );
}
