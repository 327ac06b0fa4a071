// The rows of the kit, in the order they run. Each one sends a few requests
// and hands what came back to its pure judge in evaluate.ts. Keys are fresh
// and random per row and run, so rows never see each other's records (nor
// another team's); only first-use's key is shared, on purpose, with the rows
// that replay it.
import { refundBodyFor, type Bodies, type Json } from './bodies.js';
import {
  createdIdOf,
  evaluateClientGuidance,
  evaluateConcurrent,
  evaluateFirstUse,
  evaluateGetResource,
  evaluateKeySentTwice,
  evaluateLostResponse,
  evaluateMalformedKeys,
  evaluateMissingKey,
  evaluateOtherBody,
  evaluateOutage,
  evaluateQuotedKey,
  evaluateRefundConcurrent,
  evaluateRefundOtherBody,
  evaluateRefundOverCapture,
  evaluateRefundReplay,
  evaluateRefusedBody,
  evaluateReplay,
  evaluateSecondTenant,
  evaluateUnauthenticated,
  numberAt,
  parseJson,
  refundAmounts,
  type RefundAmounts,
  retryAfterSeconds,
  type Verdict,
} from './evaluate.js';
import { evidenceOf, type Evidence } from './evidence.js';
import { isAnswer, type Answer, type KitHttp, type Reply } from './http.js';
import { startLossyProxy } from './lossy-proxy.js';

/** Every row's id, in the order the rows run. */
export const ROW_IDS = [
  'missing-key',
  'malformed-key',
  'key-sent-twice',
  'quoted-key',
  'first-use',
  'replay',
  'reordered-json',
  'other-body',
  'client-guidance',
  'get-resource',
  'concurrent-duplicates',
  'lost-response',
  'provider-outage',
  'second-tenant',
  'unauthenticated',
  'refused-body',
  'refund-replay',
  'refund-other-body',
  'refund-concurrent-duplicates',
  'refund-over-capture',
] as const;

/** A row's id, as --skip and --expect-fail name it. */
export type RowId = (typeof ROW_IDS)[number];

/** Whether a string is one of ROW_IDS. */
export const isRowId = (value: string): value is RowId => (ROW_IDS as readonly string[]).includes(value);

export interface RowSettings {
  path: string;
  token: string;
  tokenB: string | null;
  concurrency: number;
  /** Template with {key}; null: the outage row does not look at the record. */
  keyStatusPath: string | null;
  timeoutMs: number;
  baseUrl: string;
  /** The refund rows' settings; null without --refund-path (the rows are SKIP). */
  refund: RefundSettings | null;
}

export interface RefundSettings {
  /** The refund route, with {id}. */
  pathTemplate: string;
  /** The refund body; `amountField` is set per request. */
  body: Json;
  amountField: string;
  /** What a fresh resource can refund; undefined: read from the create's 201 body. */
  total: number | undefined;
  /** The resource's GET with {id}; null: the over-capture row judges by the answers. */
  resourcePath: string | null;
  refundedField: string;
}

export interface RowContext {
  readonly http: KitHttp;
  readonly settings: RowSettings;
  readonly bodies: Bodies;
  /** A fresh random key, labelled so that a team can find the kit's records in its own logs. */
  key(label: string): string;
  /** Set by first-use: the key and its answer, for the rows that replay it. */
  firstUse: { key: string; answer: Answer } | null;
  /** Set by refund-replay: its key, resource and amounts, for refund-other-body. */
  refundFirst: { key: string; resourceId: string; amounts: RefundAmounts } | null;
}

export interface RowOutcome {
  verdict: Verdict;
  evidence: Evidence[];
}

export interface Row {
  id: RowId;
  title: string;
  /** The clause it checks: the IETF draft's section, or the package's contract (packages/nest-idempotency/docs/contract.md). */
  clause: string;
  requires?: Array<'first-use' | 'token-b' | 'refund-path' | 'refund-first'>;
  run(ctx: RowContext): Promise<RowOutcome>;
}

const DRAFT = 'draft-ietf-httpapi-idempotency-key-header-07';
const README = 'nest-idempotency docs/contract.md';
/** After a 409, a retry waits what Retry-After asks, but never longer than this: the run stays bounded. */
const MAX_RETRY_WAIT_MS = 5_000;
const LOST_RESPONSE_MAX_RETRIES = 3;

interface PostSpec {
  /** Omitted: no Idempotency-Key field; an array sends the field once per element. */
  key?: string | string[];
  body?: string;
  /** Null: no Authorization field. */
  token?: string | null;
  via?: string;
}

function post(ctx: RowContext, spec: PostSpec): Promise<Reply> {
  const headers: Record<string, string | string[]> = {};
  const token = spec.token === undefined ? ctx.settings.token : spec.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (spec.key !== undefined) headers['idempotency-key'] = spec.key;
  return ctx.http.send({ method: 'POST', path: ctx.settings.path, headers, body: spec.body ?? ctx.bodies.base, via: spec.via });
}

const first = (ctx: RowContext) => {
  if (!ctx.firstUse) throw new Error('first-use has not succeeded');
  return ctx.firstUse;
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const missingKey: Row = {
  id: 'missing-key',
  title: 'no Idempotency-Key -> 400',
  clause: `${DRAFT} §2.7 Error Scenarios; ${README}: no Idempotency-Key -> 400 idempotency_key_missing`,
  async run(ctx) {
    const reply = await post(ctx, {});
    return { verdict: evaluateMissingKey(reply), evidence: [evidenceOf('POST without Idempotency-Key', reply)] };
  },
};

const malformedKey: Row = {
  id: 'malformed-key',
  title: 'malformed key -> 400',
  clause: `${DRAFT} §2.1 Syntax and §5 Security Considerations (validate the key); ${README}: not 1-255 printable ASCII -> 400 idempotency_key_invalid`,
  async run(ctx) {
    const cases: Array<[string, string]> = [
      ['256 characters', ctx.key('long').padEnd(256, 'x')],
      ['a control character (tab)', `${ctx.key('tab')}\tx`],
      ['a non-ASCII character', `${ctx.key('latin1')}\u00e9`],
      ['an empty value', ''],
    ];
    const results = [];
    for (const [label, key] of cases) results.push({ label, reply: await post(ctx, { key }) });
    return {
      verdict: evaluateMalformedKeys(results),
      evidence: results.map(({ label, reply }) => evidenceOf(label, reply)),
    };
  },
};

const keySentTwice: Row = {
  id: 'key-sent-twice',
  title: 'Idempotency-Key sent twice -> 400',
  clause: `${DRAFT} §2.1 Syntax (no more than one Idempotency-Key field); ${README}: sent twice -> 400 idempotency_key_invalid`,
  async run(ctx) {
    const reply = await post(ctx, { key: [ctx.key('twice-a'), ctx.key('twice-b')] });
    return { verdict: evaluateKeySentTwice(reply), evidence: [evidenceOf('two Idempotency-Key fields', reply)] };
  },
};

const quotedKey: Row = {
  id: 'quoted-key',
  title: 'the draft\'s quoted key "k" is the same key as k',
  clause: `${DRAFT} §2.1 Syntax: Idempotency-Key = sf-string (RFC 8941 §3.3.3)`,
  async run(ctx) {
    const key = ctx.key('quoted');
    const quoted = await post(ctx, { key: `"${key}"` });
    const bare = await post(ctx, { key });
    return { verdict: evaluateQuotedKey(quoted, bare), evidence: [evidenceOf(`"${key}"`, quoted), evidenceOf(`${key} (bare)`, bare)] };
  },
};

const firstUse: Row = {
  id: 'first-use',
  title: 'first use -> 2xx with Idempotency-Expires',
  clause: `${DRAFT} §2.6 (first time request) and §2.3 (expiry policy); ${README}: first use runs, Idempotency-Expires: <HTTP date>`,
  async run(ctx) {
    const key = ctx.key('first');
    const reply = await post(ctx, { key });
    const verdict = evaluateFirstUse(reply, new Date());
    // Any 2xx made a resource: the rows that replay it run even when this row fails on a header.
    if (isAnswer(reply) && reply.status >= 200 && reply.status < 300) ctx.firstUse = { key, answer: reply };
    return { verdict, evidence: [evidenceOf(`first use of ${key}`, reply)] };
  },
};

const replay: Row = {
  id: 'replay',
  title: 'same key + same body -> same status, same bytes, Idempotent-Replayed: true',
  clause: `${DRAFT} §2.6 (duplicate request: the result of the completed operation); ${README}: same key, same body, finished`,
  requires: ['first-use'],
  async run(ctx) {
    const { key, answer } = first(ctx);
    const retry = await post(ctx, { key });
    return { verdict: evaluateReplay(answer, retry), evidence: [evidenceOf('original', answer), evidenceOf('retry', retry)] };
  },
};

const reorderedJson: Row = {
  id: 'reordered-json',
  title: 'same key + same JSON, keys reordered -> replay',
  clause: `${DRAFT} §2.4 Idempotency Fingerprint; ${README} Fingerprint: object key order does not matter`,
  requires: ['first-use'],
  async run(ctx) {
    if (ctx.bodies.reordered === ctx.bodies.base) {
      return { verdict: { status: 'SKIP', reason: 'the body has no object with two keys to reorder' }, evidence: [] };
    }
    const { key, answer } = first(ctx);
    const retry = await post(ctx, { key, body: ctx.bodies.reordered });
    return {
      verdict: evaluateReplay(answer, retry),
      evidence: [evidenceOf('original', answer), evidenceOf(`retry with ${ctx.bodies.reordered.slice(0, 60)}...`, retry)],
    };
  },
};

const otherBody: Row = {
  id: 'other-body',
  title: 'same key + other body -> 422',
  clause: `${DRAFT} §2.2 and §2.7 (key reused with a different payload: 422); ${README}: same key, other body -> 422 idempotency_key_reused`,
  requires: ['first-use'],
  async run(ctx) {
    const reply = await post(ctx, { key: first(ctx).key, body: ctx.bodies.other });
    return { verdict: evaluateOtherBody(reply), evidence: [evidenceOf(`other body ${ctx.bodies.other.slice(0, 60)}...`, reply)] };
  },
};

const clientGuidance: Row = {
  id: 'client-guidance',
  title: 'errors say what the client may do next (retryable, reuseKey, newKeySafe)',
  clause: `${README}: every problem+json carries retryable, reuseKey, newKeySafe; a 422 for another body is newKeySafe`,
  requires: ['first-use'],
  async run(ctx) {
    const other = await post(ctx, { key: first(ctx).key, body: ctx.bodies.other });
    const missing = await post(ctx, {});
    return {
      verdict: evaluateClientGuidance(other, missing),
      evidence: [evidenceOf('same key, other body', other), evidenceOf('POST without Idempotency-Key', missing)],
    };
  },
};

const getResource: Row = {
  id: 'get-resource',
  title: 'GET of the created resource matches the replayed body',
  clause: `${README} and API: the replay describes the one resource created (Location, GET /v1/orders/:id)`,
  requires: ['first-use'],
  async run(ctx) {
    const { key, answer } = first(ctx);
    const url = resourceUrl(ctx, answer);
    if (!url) return { verdict: { status: 'SKIP', reason: 'the first use has no Location header and no "id" field' }, evidence: [] };
    if (!ctx.http.sameOrigin(url)) {
      const reason = `the Location names ${url.origin}, not the base URL's origin: not followed (the token goes to the base URL's origin only)`;
      return { verdict: { status: 'SKIP', reason }, evidence: [evidenceOf('first use', answer)] };
    }
    const replayed = await post(ctx, { key });
    const resource = await ctx.http.get(url, { authorization: `Bearer ${ctx.settings.token}` });
    return {
      verdict: evaluateGetResource(replayed, resource),
      evidence: [evidenceOf('replay', replayed), evidenceOf(`GET ${url.pathname}`, resource)],
    };
  },
};

/** Location when the answer has one, else {path}/{id} from the body's "id". */
function resourceUrl(ctx: RowContext, answer: Answer): URL | null {
  if (answer.headers.location) return ctx.http.resolve(answer.headers.location);
  const id = (parseJson(answer.body) as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string' && typeof id !== 'number') return null;
  return ctx.http.resolve(ctx.http.fullPath(`${ctx.settings.path}/${encodeURIComponent(String(id))}`));
}

const concurrentDuplicates: Row = {
  id: 'concurrent-duplicates',
  title: 'N concurrent duplicates -> one result; the others replay it or 409 + Retry-After',
  clause: `${DRAFT} §2.6 (concurrent request) and §2.7 (409); ${README}: same key while the first request is still running`,
  async run(ctx) {
    const key = ctx.key('concurrent');
    const replies = await Promise.all(Array.from({ length: ctx.settings.concurrency }, () => post(ctx, { key })));
    const followUp = await post(ctx, { key });
    return {
      verdict: evaluateConcurrent(replies, followUp),
      evidence: [...replies.map((reply, index) => evidenceOf(`duplicate ${index + 1}`, reply)), evidenceOf('follow-up', followUp)],
    };
  },
};

const lostResponse: Row = {
  id: 'lost-response',
  title: "lost response (the kit's proxy drops the first answer) -> the retry replays",
  clause: `${DRAFT} §1 (a client that got no answer retries safely) and §2.6; ${README}: same key, same body, finished -> replay`,
  async run(ctx) {
    const proxy = await startLossyProxy(new URL(ctx.settings.baseUrl), 1, ctx.settings.timeoutMs);
    try {
      const key = ctx.key('lost');
      const firstReply = await post(ctx, { key, via: proxy.origin });
      const retries = await retryPast409(() => post(ctx, { key, via: proxy.origin }));
      const lost = proxy.lost()[0] ?? null;
      const evidence = [evidenceOf('first request (answer dropped)', firstReply)];
      if (lost) evidence.push(evidenceOf('what the deployment had started to answer', lost));
      evidence.push(...retries.map((reply, index) => evidenceOf(`retry ${index + 1}`, reply)));
      return { verdict: evaluateLostResponse({ first: firstReply, lost, retries }), evidence };
    } finally {
      await proxy.close();
    }
  },
};

/** Retries while the answer is 409, honouring Retry-After up to MAX_RETRY_WAIT_MS; returns every reply. */
async function retryPast409(send: () => Promise<Reply>): Promise<Reply[]> {
  const replies = [await send()];
  for (let attempt = 1; attempt < LOST_RESPONSE_MAX_RETRIES; attempt++) {
    const last = replies[replies.length - 1];
    if (!isAnswer(last) || last.status !== 409) break;
    const seconds = retryAfterSeconds(last.headers['retry-after'], new Date()) ?? 1;
    await sleep(Math.min(seconds * 1000, MAX_RETRY_WAIT_MS));
    replies.push(await send());
  }
  return replies;
}

const providerOutage: Row = {
  id: 'provider-outage',
  title: 'provider outage -> 503 + Retry-After, nothing stored, the retry is attempted again',
  clause: `${README}: provider outage / 5xx / timeout -> 503 + Retry-After, nothing stored; the retry resumes`,
  async run(ctx) {
    const key = ctx.key('outage');
    const outage = ctx.bodies.outage;
    if (outage === null) throw new Error('no outage body was derived (the row was meant to be skipped)');
    const firstReply = await post(ctx, { key, body: outage });
    const retry = await post(ctx, { key, body: outage });
    const otherBodyReply = await post(ctx, { key });
    const keyRecord = ctx.settings.keyStatusPath === null ? null : await getKeyRecord(ctx, ctx.settings.keyStatusPath, key);
    const evidence = [
      evidenceOf('outage body', firstReply),
      evidenceOf('same key, same body, at once', retry),
      evidenceOf('same key, the good body', otherBodyReply),
    ];
    if (keyRecord) evidence.push(evidenceOf("the key's record", keyRecord));
    if (isAnswer(keyRecord) && keyRecord.status === 403) return { verdict: { status: 'SKIP', reason: missingScope(keyRecord) }, evidence };
    return { verdict: evaluateOutage({ first: firstReply, retry, otherBody: otherBodyReply, keyRecord }), evidence };
  },
};

/**
 * A 403 on the key's record is the token's scope, not the service's
 * behaviour: the row cannot judge the record, so it is SKIP with the scope
 * the answer names (this service's problem detail says it; `admin` otherwise).
 */
export function missingScope(reply: Answer): string {
  const detail = (parseJson(reply.body) as { detail?: unknown } | undefined)?.detail;
  const named = typeof detail === 'string' ? /"([a-z0-9_.:+-]+)" scope/.exec(detail)?.[1] : undefined;
  return `the key's record answered 403: the token lacks the "${named ?? 'admin'}" scope (give --token a key with it, or --key-status-path '' not to read the record)`;
}

function getKeyRecord(ctx: RowContext, template: string, key: string): Promise<Reply> {
  const url = ctx.http.resolve(ctx.http.fullPath(template.replace('{key}', encodeURIComponent(key))));
  return ctx.http.get(url, { authorization: `Bearer ${ctx.settings.token}` });
}

const secondTenant: Row = {
  id: 'second-tenant',
  title: "a second tenant's identical key and body -> an independent request",
  clause: `${DRAFT} §5 Security Considerations (a composite key with client attributes); ${README} Scope: a key is private to your API key`,
  requires: ['first-use', 'token-b'],
  async run(ctx) {
    const { key, answer } = first(ctx);
    const reply = await post(ctx, { key, token: ctx.settings.tokenB });
    return {
      verdict: evaluateSecondTenant(answer, reply),
      evidence: [evidenceOf('tenant A (first use)', answer), evidenceOf('tenant B, same key and body', reply)],
    };
  },
};

const unauthenticated: Row = {
  id: 'unauthenticated',
  title: 'unauthenticated -> 401, identical for a used and an unused key',
  clause: `${DRAFT} §5 Security Considerations (data leaks); ${README}: no or unknown API key -> 401 before any look-up; Security: no oracle`,
  requires: ['first-use'],
  async run(ctx) {
    const used = first(ctx).key;
    const pairs = [];
    for (const [label, token] of [
      ['no Authorization', null],
      ['an unknown API key', `conformance-not-a-key-${ctx.key('token')}`],
    ] as const) {
      pairs.push({ label, used: await post(ctx, { key: used, token }), unused: await post(ctx, { key: ctx.key('unused'), token }) });
    }
    return {
      verdict: evaluateUnauthenticated(pairs),
      evidence: pairs.flatMap((pair) => [
        evidenceOf(`${pair.label}, used key`, pair.used),
        evidenceOf(`${pair.label}, unused key`, pair.unused),
      ]),
    };
  },
};

// ---------------------------------------------------------------- refunds

const refundSettings = (ctx: RowContext): RefundSettings => {
  if (!ctx.settings.refund) throw new Error('no --refund-path (the row was meant to be skipped)');
  return ctx.settings.refund;
};

interface Refundable {
  id: string;
  /** What it can refund in total; null when neither --refund-total nor its 201 body says. */
  total: number | null;
  answer: Answer;
}

/** A fresh resource through the create route (its own key): the refund rows never share one with another row. */
async function createRefundable(ctx: RowContext, label: string): Promise<Refundable> {
  const reply = await post(ctx, { key: ctx.key(label) });
  if (!isAnswer(reply)) throw new Error(`creating a resource to refund (POST ${ctx.settings.path}): no answer (${reply.error})`);
  if (reply.status < 200 || reply.status > 299)
    throw new Error(`creating a resource to refund (POST ${ctx.settings.path}): got ${reply.status}`);
  const id = createdIdOf(reply);
  if (!id) throw new Error(`the create's ${reply.status} has neither an "id" field nor a Location: nothing to refund`);
  const total = refundSettings(ctx).total ?? numberAt(reply.body, 'capturedMinor') ?? numberAt(reply.body, 'amountMinor');
  return { id, total, answer: reply };
}

function refund(ctx: RowContext, resourceId: string, key: string, body: string): Promise<Reply> {
  const path = refundSettings(ctx).pathTemplate.replace('{id}', encodeURIComponent(resourceId));
  const headers = { authorization: `Bearer ${ctx.settings.token}`, 'idempotency-key': key };
  return ctx.http.send({ method: 'POST', path, headers, body });
}

const refundBody = (ctx: RowContext, amount: number) => refundBodyFor(refundSettings(ctx).body, refundSettings(ctx).amountField, amount);

const REFUND = `${README} (refunds: a keyed refund is an idempotent POST like any other)`;

const refundReplay: Row = {
  id: 'refund-replay',
  title: 'keyed refund: same key + same body -> same status, same bytes, Idempotent-Replayed',
  clause: `${DRAFT} §2.6; ${REFUND}: same key, same body, finished`,
  requires: ['refund-path'],
  async run(ctx) {
    const target = await createRefundable(ctx, 'refund-target');
    const amounts = refundAmounts(target.total ?? 1);
    const key = ctx.key('refund');
    const body = refundBody(ctx, amounts.small);
    const first = await refund(ctx, target.id, key, body);
    const retry = await refund(ctx, target.id, key, body);
    if (isAnswer(first) && first.status >= 200 && first.status < 300) ctx.refundFirst = { key, resourceId: target.id, amounts };
    return {
      verdict: evaluateRefundReplay(first, retry),
      evidence: [evidenceOf(`created ${target.id}`, target.answer), evidenceOf(`refund ${body}`, first), evidenceOf('retry', retry)],
    };
  },
};

const refundOtherBody: Row = {
  id: 'refund-other-body',
  title: 'keyed refund: same key + other amount -> 422',
  clause: `${DRAFT} §2.2 and §2.7; ${REFUND}: same key, other body -> 422 idempotency_key_reused`,
  requires: ['refund-path', 'refund-first'],
  async run(ctx) {
    if (!ctx.refundFirst) throw new Error('refund-replay has not succeeded');
    const { key, resourceId, amounts } = ctx.refundFirst;
    const body = refundBody(ctx, amounts.other);
    const reply = await refund(ctx, resourceId, key, body);
    return { verdict: evaluateRefundOtherBody(reply), evidence: [evidenceOf(`same key, ${body}`, reply)] };
  },
};

const refundConcurrent: Row = {
  id: 'refund-concurrent-duplicates',
  title: 'N copies of one keyed refund at once -> one refund (its replays, or 409 + Retry-After)',
  clause: `${DRAFT} §2.6 (concurrent request) and §2.7 (409); ${REFUND}: same key while the first request is still running`,
  requires: ['refund-path'],
  async run(ctx) {
    const target = await createRefundable(ctx, 'refund-concurrent-target');
    const key = ctx.key('refund-concurrent');
    const body = refundBody(ctx, refundAmounts(target.total ?? 1).small);
    const replies = await Promise.all(Array.from({ length: ctx.settings.concurrency }, () => refund(ctx, target.id, key, body)));
    const followUp = await refund(ctx, target.id, key, body);
    return {
      verdict: evaluateRefundConcurrent(replies, followUp),
      evidence: [
        evidenceOf(`created ${target.id}`, target.answer),
        ...replies.map((reply, index) => evidenceOf(`copy ${index + 1}`, reply)),
        evidenceOf('follow-up', followUp),
      ],
    };
  },
};

const refundOverCapture: Row = {
  id: 'refund-over-capture',
  title: 'two refunds (other keys) past what was captured -> the second 422, the first intact',
  clause: `${REFUND}: a refund that would take the refunds past the captured amount -> 422, nothing written`,
  requires: ['refund-path'],
  async run(ctx) {
    const settings = refundSettings(ctx);
    const target = await createRefundable(ctx, 'refund-over-target');
    if (target.total === null) {
      const reason = `no --refund-total, and the create's 201 body has no capturedMinor or amountMinor`;
      return { verdict: { status: 'SKIP', reason }, evidence: [evidenceOf(`created ${target.id}`, target.answer)] };
    }
    const amount = refundAmounts(target.total).overCapture;
    if (amount === null) {
      return { verdict: { status: 'SKIP', reason: `a total of ${target.total} cannot be split into two refunds` }, evidence: [] };
    }
    const body = refundBody(ctx, amount);
    const firstKey = ctx.key('refund-over-a');
    const first = await refund(ctx, target.id, firstKey, body);
    const second = await refund(ctx, target.id, ctx.key('refund-over-b'), body);
    const resource =
      settings.resourcePath === null
        ? null
        : await ctx.http.get(ctx.http.resolve(ctx.http.fullPath(settings.resourcePath.replace('{id}', encodeURIComponent(target.id)))), {
            authorization: `Bearer ${ctx.settings.token}`,
          });
    const replayOfFirst = resource === null ? await refund(ctx, target.id, firstKey, body) : null;
    const evidence = [
      evidenceOf(`created ${target.id} (total ${target.total})`, target.answer),
      evidenceOf(`refund ${body}`, first),
      evidenceOf(`another key, ${body}`, second),
    ];
    if (resource) evidence.push(evidenceOf(`GET ${settings.resourcePath}`, resource));
    if (replayOfFirst) evidence.push(evidenceOf("the first refund's key again", replayOfFirst));
    return {
      verdict: evaluateRefundOverCapture({
        total: target.total,
        amount,
        amountField: settings.amountField,
        first,
        second,
        resource,
        refundedField: settings.refundedField,
        replayOfFirst,
      }),
      evidence,
    };
  },
};

const refusedBody: Row = {
  id: 'refused-body',
  title: 'a refused body does not burn its key: invalid -> 4xx, then the valid body under that key -> 2xx, then a replay',
  clause: `${DRAFT} §2.6 and §2.7 (a retry of the same operation); Stripe: no idempotent result is saved when the parameters failed validation; ${README}: a request refused before the work ran keeps no record`,
  async run(ctx) {
    const key = ctx.key('refused');
    const refused = await post(ctx, { key, body: ctx.bodies.refused });
    const corrected = await post(ctx, { key });
    const retry = await post(ctx, { key });
    return {
      verdict: evaluateRefusedBody({ refused, corrected, retry }),
      evidence: [
        evidenceOf(`refused body ${ctx.bodies.refused.slice(0, 60)}`, refused),
        evidenceOf('the valid body, same key', corrected),
        evidenceOf('its retry', retry),
      ],
    };
  },
};

export const ROWS: readonly Row[] = [
  missingKey,
  malformedKey,
  keySentTwice,
  quotedKey,
  firstUse,
  replay,
  reorderedJson,
  otherBody,
  clientGuidance,
  getResource,
  concurrentDuplicates,
  lostResponse,
  providerOutage,
  secondTenant,
  unauthenticated,
  refusedBody,
  refundReplay,
  refundOtherBody,
  refundConcurrent,
  refundOverCapture,
];
