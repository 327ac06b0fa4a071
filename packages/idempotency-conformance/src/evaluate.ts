// The judgement of each row, as pure functions of what was received: the
// rows in rows.ts only send requests and hand the answers over, so every
// rule here is unit-tested without a server (evaluate.spec.ts).
import { isAnswer, type Answer, type Reply } from './http.js';
import type { LostAnswer } from './lossy-proxy.js';

export type VerdictStatus = 'PASS' | 'FAIL' | 'SKIP';

export interface Verdict {
  status: VerdictStatus;
  reason: string;
}

type Problem = string | null | undefined | false;

/** PASS with `passReason` when no problem was found, else FAIL listing them all. */
export function judge(problems: Problem[], passReason: string): Verdict {
  const found = problems.filter((problem): problem is string => typeof problem === 'string');
  return found.length > 0 ? { status: 'FAIL', reason: found.join('; ') } : { status: 'PASS', reason: passReason };
}

const is2xx = (status: number) => status >= 200 && status < 300;

export const isReplayed = (answer: Answer) => answer.headers['idempotent-replayed']?.toLowerCase() === 'true';

export function statusProblem(reply: Reply, expected: number | '2xx', what: string): string | null {
  if (!isAnswer(reply)) return `${what}: no answer (${reply.error})`;
  const ok = expected === '2xx' ? is2xx(reply.status) : reply.status === expected;
  return ok ? null : `${what}: got ${reply.status}, expected ${expected}`;
}

// RFC 9110 §5.6.7: senders generate IMF-fixdate; other forms are obsolete.
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

export function parseHttpDate(value: string | undefined): Date | null {
  if (value === undefined || !IMF_FIXDATE.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** RFC 9110 §10.2.3 Retry-After: delay-seconds or an HTTP-date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = parseHttpDate(value.trim());
  return date ? Math.max(0, Math.ceil((date.getTime() - now.getTime()) / 1000)) : null;
}

function retryAfterProblem(answer: Answer, what: string): string | null {
  const value = answer.headers['retry-after'];
  if (value === undefined) return `${what}: ${answer.status} without Retry-After`;
  return retryAfterSeconds(value, new Date()) === null ? `${what}: unreadable Retry-After "${value}"` : null;
}

/**
 * What makes `retry` the stored `original` sent again (README contract: the
 * original status, Content-Type, Location and exact bytes, plus
 * `Idempotent-Replayed: true`).
 */
export function replayProblems(original: Answer, retry: Reply, what: string): string[] {
  if (!isAnswer(retry)) return [`${what}: no answer (${retry.error})`];
  const problems: string[] = [];
  if (retry.status !== original.status) problems.push(`${what}: status ${retry.status}, the original was ${original.status}`);
  if (!isReplayed(retry)) problems.push(`${what}: no "Idempotent-Replayed: true"`);
  if (!retry.body.equals(original.body))
    problems.push(`${what}: body differs from the original (${retry.body.length} vs ${original.body.length} bytes)`);
  for (const name of ['content-type', 'location']) {
    if (original.headers[name] !== undefined && retry.headers[name] !== original.headers[name]) {
      problems.push(`${what}: ${name} "${retry.headers[name] ?? '(none)'}", the original had "${original.headers[name]}"`);
    }
  }
  return problems;
}

const replayDescription = (answer: Answer) => `${answer.status}, ${answer.body.length} identical bytes, Idempotent-Replayed: true`;

export function evaluateMissingKey(reply: Reply): Verdict {
  return judge([statusProblem(reply, 400, 'POST without Idempotency-Key')], '400 without a key');
}

export function evaluateMalformedKeys(cases: Array<{ label: string; reply: Reply }>): Verdict {
  return judge(
    cases.map((item) => statusProblem(item.reply, 400, item.label)),
    `400 for each: ${cases.map((item) => item.label).join(', ')}`,
  );
}

export function evaluateKeySentTwice(reply: Reply): Verdict {
  const accepted = isAnswer(reply) && is2xx(reply.status);
  const problem = accepted
    ? `got ${reply.status}: two Idempotency-Key fields were accepted as one key (HTTP joins repeated fields with ", ")`
    : statusProblem(reply, 400, 'two Idempotency-Key fields');
  return judge([problem], '400 for two Idempotency-Key fields');
}

/** The draft's quoted form ("k") and the bare token (k) must be one key: the second use replays the first. */
export function evaluateQuotedKey(quoted: Reply, bare: Reply): Verdict {
  const first = statusProblem(quoted, '2xx', 'quoted key');
  if (first || !isAnswer(quoted)) return judge([first], '');
  const createdAgain = isAnswer(bare) && is2xx(bare.status) && !isReplayed(bare);
  const problems = createdAgain
    ? ['the bare form of the same key was processed again: the quoted and the bare form are two different keys']
    : replayProblems(quoted, bare, 'bare form after the quoted one');
  return judge(problems, `"k" then k: ${replayDescription(quoted)}`);
}

/** `now` is the kit's clock; the answer's own Date header wins when present (no clock skew between hosts). */
export function evaluateFirstUse(reply: Reply, now: Date): Verdict {
  const status = statusProblem(reply, '2xx', 'first use');
  if (status || !isAnswer(reply)) return judge([status], '');
  const raw = reply.headers['idempotency-expires'];
  const expires = parseHttpDate(raw);
  const serverNow = parseHttpDate(reply.headers.date) ?? now;
  return judge(
    [
      isReplayed(reply) && 'a first use says "Idempotent-Replayed: true"',
      raw === undefined && 'no Idempotency-Expires header',
      raw !== undefined && !expires && `Idempotency-Expires "${raw}" is not an HTTP date (IMF-fixdate)`,
      !!expires && expires.getTime() <= serverNow.getTime() && `Idempotency-Expires "${raw}" is not in the future`,
    ],
    `${reply.status}, Idempotency-Expires: ${raw}`,
  );
}

export function evaluateReplay(original: Answer, retry: Reply): Verdict {
  return judge(replayProblems(original, retry, 'retry'), replayDescription(original));
}

export function evaluateOtherBody(reply: Reply): Verdict {
  const processed = isAnswer(reply) && is2xx(reply.status);
  const problem = processed
    ? `got ${reply.status}${isReplayed(reply) ? " replaying the first body's answer" : ': another body under a used key was processed'}`
    : statusProblem(reply, 422, 'same key, other body');
  return judge([problem], '422 for another body under a used key');
}

const GUIDANCE = ['retryable', 'reuseKey', 'newKeySafe'] as const;

/**
 * A problem's guidance (README contract, "What an error tells the client"):
 * the three booleans present, a new key claimed safe only when a retry need
 * not carry the key, Retry-After with any answer that says a retry can
 * succeed, and the values `expected` names.
 */
export function guidanceProblems(reply: Reply, what: string, expected: Partial<Record<(typeof GUIDANCE)[number], boolean>>): string[] {
  if (!isAnswer(reply)) return [`${what}: no answer (${reply.error})`];
  const body = parseJson(reply.body);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return [`${what}: the body is not a JSON object`];
  const fields = body as Record<string, unknown>;
  const missing = GUIDANCE.filter((field) => typeof fields[field] !== 'boolean');
  if (missing.length > 0) return [`${what}: no boolean ${missing.join(', ')} in the problem`];
  const problems: string[] = [];
  for (const field of GUIDANCE) {
    if (expected[field] !== undefined && fields[field] !== expected[field])
      problems.push(`${what}: ${field} ${String(fields[field])}, expected ${String(expected[field])}`);
  }
  if (fields.newKeySafe === true && fields.reuseKey === true) problems.push(`${what}: newKeySafe and reuseKey both true (contradictory)`);
  if (fields.retryable === true) {
    const retryAfter = retryAfterProblem(reply, what);
    if (retryAfter) problems.push(`${retryAfter} although retryable is true`);
  }
  return problems;
}

/**
 * Another body under a used key: nothing ran for it, so a new key is safe
 * and the key need not be reused; a missing key: refused before anything
 * ran, the same request is refused again.
 */
export function evaluateClientGuidance(otherBody: Reply, missingKey: Reply): Verdict {
  const statuses = [statusProblem(otherBody, 422, 'same key, other body'), statusProblem(missingKey, 400, 'no Idempotency-Key')];
  if (statuses.some(Boolean)) return judge(statuses, '');
  return judge(
    [
      ...guidanceProblems(otherBody, '422 for another body', { retryable: false, reuseKey: false, newKeySafe: true }),
      ...guidanceProblems(missingKey, '400 without a key', { retryable: false, newKeySafe: true }),
    ],
    '422 for another body: newKeySafe true, reuseKey false, retryable false; 400 without a key: not retryable, newKeySafe true',
  );
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** JSON with every object's keys sorted: two serializations of one value compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonicalJson(child)}`).join(',')}}`;
}

/** The resource as GET shows it is the resource the replay describes (same JSON; key order may differ). */
export function evaluateGetResource(replay: Reply, resource: Reply): Verdict {
  const problems = [statusProblem(replay, '2xx', 'replay'), statusProblem(resource, 200, 'GET of the created resource')];
  if (problems.some(Boolean) || !isAnswer(replay) || !isAnswer(resource)) return judge(problems, '');
  const replayed = parseJson(replay.body);
  const shown = parseJson(resource.body);
  if (replayed === undefined || shown === undefined) return judge(['the replay or the GET is not JSON'], '');
  const same = canonicalJson(replayed) === canonicalJson(shown);
  return judge(
    [!same && `GET shows other JSON than the replay${differingFields(replayed, shown)}`],
    `GET 200, the same JSON as the replay${replay.body.equals(resource.body) ? ' (identical bytes)' : ''}`,
  );
}

function differingFields(a: unknown, b: unknown): string {
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return '';
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const names = [...new Set([...Object.keys(left), ...Object.keys(right)])].filter(
    (name) => canonicalJson(left[name]) !== canonicalJson(right[name]),
  );
  return names.length > 0 ? ` (fields: ${names.join(', ')})` : '';
}

/**
 * N duplicates sent at once: exactly one is processed; every other one is the
 * stored answer replayed, or 409 + Retry-After (still in flight); and a
 * follow-up once all have answered replays the one result.
 */
export function evaluateConcurrent(replies: Reply[], followUp: Reply): Verdict {
  const tally = tallyConcurrent(replies, followUp, [], { copy: 'duplicate', replay: 'a replay' });
  if ('verdict' in tally) return tally.verdict;
  const { problems, original, replays, conflicts } = tally;
  return judge(
    problems,
    `1 processed (${original.status}), ${replays} replayed, ${conflicts} x 409 + Retry-After; the follow-up replays it`,
  );
}

/**
 * What N copies of one keyed request sent at once came to: the one that was
 * processed, how many others were it replayed or 409 + Retry-After, and
 * every problem found (`problems` come first: the caller's own checks).
 */
function tallyConcurrent(
  replies: Reply[],
  followUp: Reply,
  problems: Problem[],
  words: { copy: string; replay: string },
): { verdict: Verdict } | { problems: Problem[]; original: Answer; replays: number; conflicts: number } {
  const answers = replies.filter(isAnswer);
  const originals = answers.filter((answer) => is2xx(answer.status) && !isReplayed(answer));
  const unanswered = replies.map((reply, index) => !isAnswer(reply) && `${words.copy} ${index + 1}: no answer (${reply.error})`);
  const found: Problem[] = [...unanswered, ...problems];
  if (originals.length !== 1)
    return { verdict: judge([...found, `${originals.length} of ${replies.length} were processed (not replays); expected exactly 1`], '') };
  const [original] = originals;
  let replays = 0;
  let conflicts = 0;
  for (const answer of answers.filter((candidate) => candidate !== original)) {
    if (answer.status === 409) {
      conflicts++;
      found.push(retryAfterProblem(answer, words.copy));
    } else if (isReplayed(answer)) {
      replays++;
      found.push(...replayProblems(original, answer, `replayed ${words.copy}`));
    } else {
      found.push(`a ${words.copy} got ${answer.status}: neither ${words.replay} nor 409 + Retry-After`);
    }
  }
  found.push(...replayProblems(original, followUp, 'follow-up after all answered'));
  return { problems: found, original, replays, conflicts };
}

export interface LostResponseObservation {
  /** What the kit got for the request whose answer the proxy dropped. */
  first: Reply;
  /** What the deployment had started to answer, as the proxy saw it. */
  lost: LostAnswer | null;
  /** The retries with the same key and body, in order (more than one only after 409s). */
  retries: Reply[];
}

export function evaluateLostResponse({ first, lost, retries }: LostResponseObservation): Verdict {
  if (isAnswer(first)) return judge([`the kit's proxy failed to drop the answer (the kit got ${first.status})`], '');
  if (!lost) return judge([`the deployment never started to answer the first request (${first.error})`], '');
  const retry = retries[retries.length - 1];
  if (!retry) return judge(['no retry was sent'], '');
  const processedAgain = isAnswer(retry) && is2xx(retry.status) && !isReplayed(retry);
  const problems: Problem[] = [
    processedAgain &&
      `the retry got ${retry.status} without "Idempotent-Replayed: true": the lost request was processed again, or the replay is not marked`,
    isAnswer(retry) && retry.status === 409 ? `still 409 after ${retries.length} retries` : statusProblem(retry, lost.status, 'retry'),
    isAnswer(retry) && !processedAgain && retry.status !== 409 && !isReplayed(retry) && 'the retry has no "Idempotent-Replayed: true"',
    isAnswer(retry) &&
      is2xx(retry.status) &&
      lost.headers.location !== undefined &&
      retry.headers.location !== lost.headers.location &&
      `the retry's Location "${retry.headers.location ?? '(none)'}" is not the lost answer's "${lost.headers.location}"`,
  ];
  return judge(problems, `the first answer (${lost.status}) was lost; the retry got ${lost.status} with Idempotent-Replayed: true`);
}

export interface RefusedBodyObservation {
  /** A body the route refuses, under a fresh key. */
  refused: Reply;
  /** The valid body under that key. */
  corrected: Reply;
  /** The valid body under that key again. */
  retry: Reply;
}

/**
 * A request refused before the work ran (validation) keeps no record: the
 * same key then serves the corrected body as a first use (not 422
 * `idempotency_key_reused`), and that answer is replayed as any other.
 */
export function evaluateRefusedBody(observed: RefusedBodyObservation): Verdict {
  const { refused, corrected, retry } = observed;
  if (isAnswer(refused) && (refused.status < 400 || refused.status >= 500 || refused.status === 409)) {
    const reason = `the refused body got ${refused.status}, not a 4xx refusal: give --refused-body-file a body the route refuses`;
    return { status: 'FAIL', reason };
  }
  const problems: Problem[] = [isAnswer(refused) ? null : `the refused body: no answer (${refused.error})`];
  if (isAnswer(corrected) && corrected.status === 422) {
    problems.push(
      "the valid body under the refused body's key got 422: the refusal burned the key (a client must mint a new key for the same operation)",
    );
  } else {
    problems.push(statusProblem(corrected, '2xx', "the valid body under the refused body's key"));
    if (isAnswer(corrected) && isReplayed(corrected)) problems.push('the valid body was answered as a replay: it had never run');
  }
  if (isAnswer(corrected) && is2xx(corrected.status)) problems.push(...replayProblems(corrected, retry, 'its retry'));
  const status = isAnswer(refused) ? refused.status : '?';
  return judge(
    problems,
    `refused ${status}; the same key then ran the valid body (${isAnswer(corrected) ? corrected.status : '?'}) and replayed it`,
  );
}

export interface OutageObservation {
  /** The outage body under a fresh key. */
  first: Reply;
  /** The same key and body again, at once. */
  retry: Reply;
  /** The same key with the good body. */
  otherBody: Reply;
  /** GET of the key's record (this service's /v1/idempotency-keys/{key}); null when not asked for. */
  keyRecord: Reply | null;
}

/**
 * README contract: a provider outage is 503 + Retry-After and nothing is
 * stored, so the retry is attempted again (not a replayed 503); the key
 * stays bound to its request (another body: 422); and the record shows the
 * retry resumed the first attempt instead of starting a new order.
 */
export function evaluateOutage(observed: OutageObservation): Verdict {
  const problems: Problem[] = [
    ...outageAnswerProblems(observed.first, 'outage'),
    ...outageAnswerProblems(observed.retry, 'retry of the outage'),
  ];
  if (isAnswer(observed.otherBody) && is2xx(observed.otherBody.status)) {
    problems.push(`the good body under the outage's key got ${observed.otherBody.status}: the key was forgotten after the outage`);
  } else {
    problems.push(statusProblem(observed.otherBody, 422, "the good body under the outage's key"));
  }
  if (observed.keyRecord) problems.push(...keyRecordProblems(observed.keyRecord));
  const retryAfter = isAnswer(observed.first) ? observed.first.headers['retry-after'] : '';
  const record = observed.keyRecord ? '; its record: no stored response, attempt 1' : '';
  return judge(problems, `503 + Retry-After: ${retryAfter}, again 503 on retry (not replayed); another body 422${record}`);
}

function outageAnswerProblems(reply: Reply, what: string): Problem[] {
  if (isAnswer(reply) && isReplayed(reply)) return [`${what}: a replayed ${reply.status}: a transient failure was stored`];
  const status = statusProblem(reply, 503, what);
  if (status || !isAnswer(reply)) return [status];
  return [retryAfterProblem(reply, what)];
}

interface KeyRecordView {
  status?: unknown;
  attempt?: unknown;
  responseStatus?: unknown;
}

function keyRecordProblems(reply: Reply): Problem[] {
  const status = statusProblem(reply, 200, 'key record');
  if (status || !isAnswer(reply)) return [status];
  const records = (parseJson(reply.body) as { records?: KeyRecordView[] } | undefined)?.records;
  if (!Array.isArray(records) || records.length !== 1)
    return [`key record: expected {records: [one record]}, got ${reply.body.subarray(0, 80).toString('utf8')}`];
  const [record] = records;
  return [
    record.responseStatus !== null && `key record: a response (${JSON.stringify(record.responseStatus)}) was stored`,
    record.attempt !== 1 &&
      `key record: attempt ${String(record.attempt)}: the retry started a new attempt (a new order) instead of resuming the first`,
    record.status !== 'pending' && record.status !== 'failed' && `key record: status "${String(record.status)}"`,
  ];
}

/** Tenant B using tenant A's key with A's body is a request of its own: processed, not A's answer. */
export function evaluateSecondTenant(tenantA: Answer, tenantB: Reply): Verdict {
  if (!isAnswer(tenantB)) return judge([`tenant B: no answer (${tenantB.error})`], '');
  const problems: Problem[] = [
    tenantB.status === 422 && "tenant B got 422: its key collided with tenant A's record (keys are not scoped per tenant)",
    tenantB.status === 409 && "tenant B got 409: its key collided with tenant A's record (keys are not scoped per tenant)",
    isReplayed(tenantB) && 'tenant B got a replay: keys are not scoped per tenant',
    tenantB.body.equals(tenantA.body) && "tenant B got tenant A's exact bytes",
  ];
  if (!problems.some(Boolean)) problems.push(statusProblem(tenantB, '2xx', 'tenant B'));
  return judge(problems, `tenant B: ${tenantB.status}, not replayed, its own resource`);
}

export interface UnauthenticatedPair {
  label: string;
  used: Reply;
  unused: Reply;
}

/** No oracle: without valid credentials a used key and an unused one get the same 401, byte for byte. */
export function evaluateUnauthenticated(pairs: UnauthenticatedPair[]): Verdict {
  const problems = pairs.flatMap(({ label, used, unused }): Problem[] => {
    const statuses = [statusProblem(used, 401, `${label}, used key`), statusProblem(unused, 401, `${label}, unused key`)];
    if (statuses.some(Boolean) || !isAnswer(used) || !isAnswer(unused)) return statuses;
    const names = (answer: Answer) => Object.keys(answer.headers).sort().join(',');
    return [
      !used.body.equals(unused.body) && `${label}: the 401 bodies of a used and an unused key differ`,
      names(used) !== names(unused) && `${label}: the 401 header fields differ (${names(used)} vs ${names(unused)})`,
    ];
  });
  return judge(
    problems,
    `401 with identical bodies and header fields for a used and an unused key (${pairs.map((pair) => pair.label).join(', ')})`,
  );
}

// ---------------------------------------------------------------- refunds
// The optional refund rows (--refund-path): a keyed refund of a resource the
// kit created itself through the create route.

/** The id of what a 2xx made: the body's "id" (string or number), else the last segment of Location; null when neither. */
export function createdIdOf(answer: Answer): string | null {
  const id = (parseJson(answer.body) as { id?: unknown } | undefined)?.id;
  if (typeof id === 'string' && id !== '') return id;
  if (typeof id === 'number') return String(id);
  const location = answer.headers.location;
  if (!location) return null;
  const segment = new URL(location, 'http://kit.invalid').pathname.split('/').filter(Boolean).pop();
  return segment ? decodeURIComponent(segment) : null;
}

/** A number at a dotted path of a JSON body; null when the body is not JSON or the field is not a number. */
export function numberAt(body: Buffer, path: string): number | null {
  let node: unknown = parseJson(body);
  for (const segment of path.split('.')) {
    if (node === null || typeof node !== 'object') return null;
    node = (node as Record<string, unknown>)[segment];
  }
  return typeof node === 'number' && Number.isFinite(node) ? node : null;
}

export interface RefundAmounts {
  /** The refund of the replay, other-body and concurrent rows: a tenth of the total (at least 1). */
  small: number;
  /** The same key with this amount: another body. */
  other: number;
  /** Each of the over-capture row's two refunds: more than half, so that the two together exceed the total. */
  overCapture: number | null;
}

/** The amounts the refund rows send, from what a fresh resource can refund in total; overCapture null below 2. */
export function refundAmounts(total: number): RefundAmounts {
  const small = Math.max(1, Math.floor(total / 10));
  return { small, other: small + 1, overCapture: total >= 2 ? Math.floor(total / 2) + 1 : null };
}

/** The first keyed refund (2xx, not marked replayed) and its retry: the stored answer sent again. */
export function evaluateRefundReplay(first: Reply, retry: Reply): Verdict {
  const status = statusProblem(first, '2xx', 'first refund');
  if (status || !isAnswer(first)) return judge([status], '');
  return judge(
    [isReplayed(first) && 'the first refund under a fresh key says "Idempotent-Replayed: true"', ...replayProblems(first, retry, 'retry')],
    `refund ${createdIdOf(first) ?? '(no id)'}: ${replayDescription(first)}`,
  );
}

/** The same refund key with another amount: refused with 422, nothing refunded. */
export function evaluateRefundOtherBody(reply: Reply): Verdict {
  const processed = isAnswer(reply) && is2xx(reply.status);
  const problem = processed
    ? `got ${reply.status}${isReplayed(reply) ? " replaying the first amount's refund" : ': another amount under a used refund key was refunded'}`
    : statusProblem(reply, 422, 'same refund key, other amount');
  return judge([problem], '422 for another amount under a used refund key');
}

/**
 * N copies of one keyed refund at once make one refund: exactly one is
 * processed, every other 2xx is that refund replayed (same id, same bytes)
 * and anything else is 409 + Retry-After (still in flight); a follow-up
 * once all have answered replays the one refund.
 */
export function evaluateRefundConcurrent(replies: Reply[], followUp: Reply): Verdict {
  const successes = replies.filter(isAnswer).filter((answer) => is2xx(answer.status));
  const ids = [...new Set(successes.map((answer) => createdIdOf(answer) ?? '(no id)'))];
  const different: Problem[] = ids.length > 1 ? [`${ids.length} different refunds for one key: ${ids.join(', ')}`] : [];
  const tally = tallyConcurrent(replies, followUp, different, { copy: 'copy', replay: 'the refund replayed' });
  if ('verdict' in tally) return tally.verdict;
  const { problems, original, replays, conflicts } = tally;
  return judge(
    problems,
    `one refund (${createdIdOf(original) ?? 'no id'}): 1 processed, ${replays} replayed, ${conflicts} x 409 + Retry-After; the follow-up replays it`,
  );
}

export interface OverCaptureObservation {
  /** What the fresh resource could refund in total. */
  total: number;
  /** The amount of each of the two refunds (more than half of the total). */
  amount: number;
  /** The field of the refund's body (and request) holding its amount. */
  amountField: string;
  first: Reply;
  /** The second refund, under another key. */
  second: Reply;
  /** GET of the resource afterwards (--resource-path), or null: judged by the answers. */
  resource: Reply | null;
  /** The resource's field holding the amount refunded so far. */
  refundedField: string;
  /** Without a resource GET: the first refund's key sent again after the 422 (its stored answer, unchanged). */
  replayOfFirst: Reply | null;
}

/**
 * Two refunds under different keys that together exceed what the resource
 * can refund: the second is refused with 422 and writes nothing, the first
 * stays as it was - by the resource's refunded amount when it can be read,
 * else by the answers (the first's own amount, and its replay unchanged).
 */
export function evaluateRefundOverCapture(o: OverCaptureObservation): Verdict {
  const what = `two refunds of ${o.amount} of ${o.total}`;
  const first = statusProblem(o.first, '2xx', `${what}: the first`);
  if (first || !isAnswer(o.first)) return judge([first], '');
  const accepted = isAnswer(o.second) && is2xx(o.second.status) ? o.second.status : null;
  const problems: Problem[] = [
    accepted !== null
      ? `${what}: the second got ${accepted}: ${2 * o.amount} refunded of ${o.total}`
      : statusProblem(o.second, 422, `${what}: the second`),
  ];
  const firstAmount = numberAt(o.first.body, o.amountField);
  if (firstAmount !== null && firstAmount !== o.amount)
    problems.push(`the first refund's ${o.amountField} is ${firstAmount}, it was asked for ${o.amount}`);
  if (o.resource) {
    const status = statusProblem(o.resource, 200, 'GET of the resource afterwards');
    const refunded = isAnswer(o.resource) && !status ? numberAt(o.resource.body, o.refundedField) : null;
    if (status) problems.push(status);
    else if (refunded === null) problems.push(`GET of the resource afterwards: no number at "${o.refundedField}"`);
    else if (refunded !== o.amount)
      problems.push(`GET of the resource afterwards: ${o.refundedField} ${refunded}, expected the first refund's ${o.amount} alone`);
    return judge(problems, `the second refund 422; the resource shows ${o.refundedField} ${o.amount} (the first alone)`);
  }
  if (firstAmount === null) problems.push(`the first refund's answer has no number at "${o.amountField}"`);
  if (o.replayOfFirst) problems.push(...replayProblems(o.first, o.replayOfFirst, "the first refund's key after the 422"));
  return judge(
    problems,
    `the second refund 422; the first's answer shows ${o.amount} and replays unchanged (judged by the answers: no --resource-path)`,
  );
}
