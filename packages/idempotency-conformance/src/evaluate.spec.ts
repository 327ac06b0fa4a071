import { describe, expect, it } from '@jest/globals';
import {
  canonicalJson,
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
  evaluateRefusedBody,
  evaluateRefundOtherBody,
  evaluateRefundOverCapture,
  evaluateRefundReplay,
  evaluateReplay,
  evaluateSecondTenant,
  evaluateUnauthenticated,
  numberAt,
  parseHttpDate,
  refundAmounts,
  retryAfterSeconds,
  type OverCaptureObservation,
} from './evaluate.js';
import type { Answer, Reply } from './http.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const TOMORROW = 'Tue, 01 Dec 2026 12:00:00 GMT';
const ORDER = '{"id":"ord_1","state":"saved","amountMinor":100}';

function answer(status: number, body = '', headers: Record<string, string> = {}): Answer {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: Buffer.from(body) };
}

const created = () => answer(201, ORDER, { location: '/v1/orders/ord_1', 'idempotency-expires': TOMORROW });
const replayed = (overrides: Record<string, string> = {}, body = ORDER) =>
  answer(201, body, { location: '/v1/orders/ord_1', 'idempotency-expires': TOMORROW, 'idempotent-replayed': 'true', ...overrides });
const conflict = (retryAfter?: string) =>
  answer(409, '{"code":"idempotency_key_in_use"}', retryAfter === undefined ? {} : { 'retry-after': retryAfter });
const reset: Reply = { error: 'ECONNRESET: read ECONNRESET' };
const problem = (status: number, extra: Record<string, string> = {}) =>
  answer(status, `{"status":${status}}`, { 'content-type': 'application/problem+json', ...extra });

describe('HTTP field parsing', () => {
  it('reads IMF-fixdate only', () => {
    expect(parseHttpDate(TOMORROW)?.toISOString()).toBe('2026-12-01T12:00:00.000Z');
    expect(parseHttpDate('2026-12-01T12:00:00Z')).toBeNull();
    expect(parseHttpDate('Tuesday, 01-Dec-26 12:00:00 GMT')).toBeNull();
    expect(parseHttpDate(undefined)).toBeNull();
  });

  it('reads Retry-After as seconds or as a date', () => {
    expect(retryAfterSeconds('2', NOW)).toBe(2);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 12:00:30 GMT', NOW)).toBe(30);
    expect(retryAfterSeconds('soon', NOW)).toBeNull();
    expect(retryAfterSeconds(undefined, NOW)).toBeNull();
  });

  it('compares JSON regardless of key order, not of array order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe(canonicalJson({ a: [{ c: 2, d: 1 }], b: 1 }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});

describe('key syntax rows', () => {
  it('missing key: 400 passes, anything else fails', () => {
    expect(evaluateMissingKey(problem(400)).status).toBe('PASS');
    expect(evaluateMissingKey(created())).toEqual({ status: 'FAIL', reason: 'POST without Idempotency-Key: got 201, expected 400' });
    expect(evaluateMissingKey(reset).reason).toContain('no answer (ECONNRESET');
  });

  it('malformed keys: every case must be 400, each failure is named', () => {
    const verdict = evaluateMalformedKeys([
      { label: '256 characters', reply: problem(400) },
      { label: 'a tab', reply: created() },
    ]);
    expect(verdict).toEqual({ status: 'FAIL', reason: 'a tab: got 201, expected 400' });
    expect(evaluateMalformedKeys([{ label: 'empty', reply: problem(400) }]).status).toBe('PASS');
  });

  it('a key sent twice that is accepted says the fields were joined', () => {
    expect(evaluateKeySentTwice(problem(400)).status).toBe('PASS');
    expect(evaluateKeySentTwice(created()).reason).toContain('accepted as one key');
  });

  it('quoted key: passes only when the bare form replays the quoted one', () => {
    expect(evaluateQuotedKey(created(), replayed()).status).toBe('PASS');
    expect(evaluateQuotedKey(created(), answer(201, '{"id":"ord_2"}')).reason).toContain('two different keys');
    expect(evaluateQuotedKey(problem(400), created())).toEqual({ status: 'FAIL', reason: 'quoted key: got 400, expected 2xx' });
  });
});

describe('first use and replay', () => {
  it('first use: 2xx, not marked replayed, Idempotency-Expires a future HTTP date', () => {
    expect(evaluateFirstUse(created(), NOW)).toEqual({ status: 'PASS', reason: `201, Idempotency-Expires: ${TOMORROW}` });
    expect(evaluateFirstUse(answer(201, ORDER), NOW).reason).toBe('no Idempotency-Expires header');
    expect(evaluateFirstUse(answer(201, ORDER, { 'idempotency-expires': '86400' }), NOW).reason).toContain('not an HTTP date');
    expect(evaluateFirstUse(replayed(), NOW).reason).toContain('Idempotent-Replayed');
  });

  it("first use: the answer's Date header is the clock (no skew between hosts)", () => {
    const stale = answer(201, ORDER, { 'idempotency-expires': TOMORROW, date: 'Wed, 02 Dec 2026 00:00:00 GMT' });
    expect(evaluateFirstUse(stale, NOW).reason).toContain('not in the future');
  });

  it('replay: status, bytes, Content-Type, Location and the header must all match', () => {
    expect(evaluateReplay(created(), replayed())).toEqual({
      status: 'PASS',
      reason: `201, ${ORDER.length} identical bytes, Idempotent-Replayed: true`,
    });
    expect(evaluateReplay(created(), replayed({ 'idempotent-replayed': 'false' })).reason).toBe('retry: no "Idempotent-Replayed: true"');
    expect(evaluateReplay(created(), replayed({}, ORDER.replace('saved', 'SAVED'))).reason).toContain('body differs');
    expect(evaluateReplay(created(), replayed({ location: '/v1/orders/ord_2' })).reason).toContain('location');
    expect(evaluateReplay(created(), replayed({ 'content-type': 'text/plain' })).reason).toContain('content-type');
    expect(evaluateReplay(created(), { ...replayed(), status: 200 }).reason).toContain('status 200, the original was 201');
  });

  it('other body: 422 passes; processing it or replaying the first answer fails', () => {
    expect(evaluateOtherBody(problem(422)).status).toBe('PASS');
    expect(evaluateOtherBody(created()).reason).toContain('was processed');
    expect(evaluateOtherBody(replayed()).reason).toContain("replaying the first body's answer");
    expect(evaluateOtherBody(problem(400)).reason).toBe('same key, other body: got 400, expected 422');
  });

  it('client guidance: a 422 for another body is newKeySafe, a 400 without a key is not retryable; contradictions fail', () => {
    const guided = (status: number, fields: Record<string, boolean>, headers: Record<string, string> = {}) =>
      answer(status, JSON.stringify({ status, ...fields }), { 'content-type': 'application/problem+json', ...headers });
    const refused = { retryable: false, reuseKey: false, newKeySafe: true };
    expect(evaluateClientGuidance(guided(422, refused), guided(400, refused)).status).toBe('PASS');
    expect(evaluateClientGuidance(problem(422), guided(400, refused)).reason).toBe(
      '422 for another body: no boolean retryable, reuseKey, newKeySafe in the problem',
    );
    expect(evaluateClientGuidance(guided(422, { ...refused, newKeySafe: false }), guided(400, refused)).reason).toBe(
      '422 for another body: newKeySafe false, expected true',
    );
    expect(evaluateClientGuidance(guided(422, refused), guided(400, { ...refused, reuseKey: true })).reason).toBe(
      '400 without a key: newKeySafe and reuseKey both true (contradictory)',
    );
    expect(evaluateClientGuidance(guided(422, refused), guided(400, { ...refused, retryable: true })).reason).toBe(
      '400 without a key: retryable true, expected false; 400 without a key: 400 without Retry-After although retryable is true',
    );
    expect(evaluateClientGuidance(problem(409), guided(400, refused)).reason).toBe('same key, other body: got 409, expected 422');
  });

  it('GET of the resource: same JSON as the replay, key order aside', () => {
    const reordered = answer(200, '{"amountMinor":100,"state":"saved","id":"ord_1"}');
    expect(evaluateGetResource(replayed(), reordered)).toEqual({ status: 'PASS', reason: 'GET 200, the same JSON as the replay' });
    expect(evaluateGetResource(replayed(), answer(200, ORDER)).reason).toContain('(identical bytes)');
    expect(evaluateGetResource(replayed(), answer(200, ORDER.replace('saved', 'failed'))).reason).toContain('(fields: state)');
    expect(evaluateGetResource(replayed(), problem(404)).reason).toContain('got 404, expected 200');
  });
});

describe('refused body (issue 48)', () => {
  const refused = () => answer(400, '{"code":"validation_failed"}', { 'content-type': 'application/problem+json' });

  it('passes when the refusal left the key free: the valid body ran under it and replays', () => {
    expect(evaluateRefusedBody({ refused: refused(), corrected: created(), retry: replayed() }).status).toBe('PASS');
  });

  it('fails when the refusal burned the key: the valid body under it is 422', () => {
    const verdict = evaluateRefusedBody({
      refused: refused(),
      corrected: answer(422, '{"code":"idempotency_key_reused"}'),
      retry: answer(422),
    });
    expect(verdict.status).toBe('FAIL');
    expect(verdict.reason).toContain('burned the key');
  });

  it('fails when the retry of the valid body is not its replay', () => {
    expect(evaluateRefusedBody({ refused: refused(), corrected: created(), retry: created() }).status).toBe('FAIL');
  });

  it('fails, naming the option, when the "refused" body was accepted', () => {
    const verdict = evaluateRefusedBody({ refused: created(), corrected: replayed(), retry: replayed() });
    expect(verdict.status).toBe('FAIL');
    expect(verdict.reason).toContain('--refused-body-file');
  });
});

describe('concurrent duplicates', () => {
  it('one processed, the rest replays or 409 + Retry-After, and the follow-up replays', () => {
    const verdict = evaluateConcurrent([conflict('1'), created(), replayed(), conflict('Mon, 30 Nov 2026 12:00:30 GMT')], replayed());
    expect(verdict).toEqual({ status: 'PASS', reason: '1 processed (201), 1 replayed, 2 x 409 + Retry-After; the follow-up replays it' });
  });

  it('two processed is a duplicate creation', () => {
    expect(evaluateConcurrent([created(), answer(201, '{"id":"ord_2"}')], replayed()).reason).toContain('2 of 2 were processed');
  });

  it('a 409 without Retry-After, another status, or a follow-up that is not a replay fails', () => {
    expect(evaluateConcurrent([created(), conflict()], replayed()).reason).toContain('409 without Retry-After');
    expect(evaluateConcurrent([created(), problem(500)], replayed()).reason).toContain('neither a replay nor 409');
    expect(evaluateConcurrent([created(), conflict('1')], created()).reason).toContain(
      'follow-up after all answered: no "Idempotent-Replayed: true"',
    );
  });
});

describe('lost response', () => {
  const lost = { status: 201, headers: { location: '/v1/orders/ord_1' } };

  it('passes when the kit got nothing, the deployment had answered, and the retry replays it', () => {
    expect(evaluateLostResponse({ first: reset, lost, retries: [replayed()] }).status).toBe('PASS');
    expect(evaluateLostResponse({ first: reset, lost, retries: [conflict('1'), replayed()] }).status).toBe('PASS');
  });

  it('fails when the retry is processed again, points elsewhere, or stays 409', () => {
    expect(evaluateLostResponse({ first: reset, lost, retries: [created()] }).reason).toContain('processed again');
    expect(evaluateLostResponse({ first: reset, lost, retries: [replayed({ location: '/v1/orders/ord_9' })] }).reason).toContain(
      'not the lost answer',
    );
    expect(evaluateLostResponse({ first: reset, lost, retries: [conflict('1'), conflict('1')] }).reason).toBe('still 409 after 2 retries');
  });

  it('fails, saying so, when the answer was not lost at all', () => {
    expect(evaluateLostResponse({ first: created(), lost: null, retries: [replayed()] }).reason).toContain('failed to drop');
    expect(evaluateLostResponse({ first: reset, lost: null, retries: [replayed()] }).reason).toContain('never started to answer');
  });
});

describe('provider outage', () => {
  const outage = () => problem(503, { 'retry-after': '2' });
  const record = (fields: Record<string, unknown>) =>
    answer(200, JSON.stringify({ records: [{ status: 'pending', attempt: 1, responseStatus: null, ...fields }] }));

  it('503 + Retry-After twice, not replayed, the key kept (422), no stored response, attempt 1', () => {
    const verdict = evaluateOutage({ first: outage(), retry: outage(), otherBody: problem(422), keyRecord: record({}) });
    expect(verdict.status).toBe('PASS');
    expect(evaluateOutage({ first: outage(), retry: outage(), otherBody: problem(422), keyRecord: null }).status).toBe('PASS');
  });

  it('a stored and replayed 503 fails', () => {
    const stored = problem(503, { 'retry-after': '2', 'idempotent-replayed': 'true' });
    expect(evaluateOutage({ first: outage(), retry: stored, otherBody: problem(422), keyRecord: null }).reason).toContain(
      'a transient failure was stored',
    );
  });

  it('no Retry-After, a forgotten key, a stored response or a new attempt fails', () => {
    expect(evaluateOutage({ first: problem(503), retry: outage(), otherBody: problem(422), keyRecord: null }).reason).toBe(
      'outage: 503 without Retry-After',
    );
    expect(evaluateOutage({ first: outage(), retry: outage(), otherBody: created(), keyRecord: null }).reason).toContain('forgotten');
    expect(
      evaluateOutage({ first: outage(), retry: outage(), otherBody: problem(422), keyRecord: record({ responseStatus: 503 }) }).reason,
    ).toContain('(503) was stored');
    expect(
      evaluateOutage({ first: outage(), retry: outage(), otherBody: problem(422), keyRecord: record({ attempt: 2 }) }).reason,
    ).toContain('new attempt');
  });
});

describe('tenants and authentication', () => {
  it('second tenant: its own 2xx passes; a replay, the same bytes or a collision fails', () => {
    expect(evaluateSecondTenant(created(), answer(201, '{"id":"ord_2"}')).status).toBe('PASS');
    expect(evaluateSecondTenant(created(), replayed()).reason).toContain('not scoped per tenant');
    expect(evaluateSecondTenant(created(), problem(422)).reason).toContain('collided');
    expect(evaluateSecondTenant(created(), answer(201, ORDER)).reason).toContain("tenant A's exact bytes");
    expect(evaluateSecondTenant(created(), problem(500)).reason).toBe('tenant B: got 500, expected 2xx');
  });

  it('unauthenticated: identical 401s pass; a different body, header set or status fails', () => {
    const unauthorized = (extra: Record<string, string> = {}) => problem(401, extra);
    expect(evaluateUnauthenticated([{ label: 'none', used: unauthorized(), unused: unauthorized() }]).status).toBe('PASS');
    expect(evaluateUnauthenticated([{ label: 'none', used: answer(401, 'x'), unused: answer(401, 'y') }]).reason).toContain('bodies');
    expect(
      evaluateUnauthenticated([{ label: 'none', used: unauthorized({ 'x-key-state': 'used' }), unused: unauthorized() }]).reason,
    ).toContain('header fields');
    expect(evaluateUnauthenticated([{ label: 'none', used: replayed(), unused: unauthorized() }]).reason).toBe(
      'none, used key: got 201, expected 401',
    );
  });
});

describe('refund rows', () => {
  const REFUND = '{"id":"rfd_1","orderId":"ord_1","amountMinor":10,"currency":"USD","state":"succeeded","reason":"requested_by_customer"}';
  const refunded = (body = REFUND) => answer(201, body, { location: '/v1/orders/ord_1/refunds/rfd_1', 'idempotency-expires': TOMORROW });
  const refundReplayed = (overrides: Record<string, string> = {}, body = REFUND) =>
    answer(201, body, {
      location: '/v1/orders/ord_1/refunds/rfd_1',
      'idempotency-expires': TOMORROW,
      'idempotent-replayed': 'true',
      ...overrides,
    });

  it("takes a created resource's id from its body, else from the last segment of Location", () => {
    expect(createdIdOf(created())).toBe('ord_1');
    expect(createdIdOf(answer(201, '{"id":42}'))).toBe('42');
    expect(createdIdOf(answer(201, '', { location: 'https://api.example/v1/orders/ord%209?x=1' }))).toBe('ord 9');
    expect(createdIdOf(answer(201, 'not json'))).toBeNull();
    expect(createdIdOf(answer(201, '{"id":""}'))).toBeNull();
  });

  it('reads a number at a dotted path of a body, nothing else', () => {
    expect(numberAt(Buffer.from('{"a":{"b":25}}'), 'a.b')).toBe(25);
    expect(numberAt(Buffer.from('{"a":{"b":"25"}}'), 'a.b')).toBeNull();
    expect(numberAt(Buffer.from('{"a":1}'), 'a.b')).toBeNull();
    expect(numberAt(Buffer.from('nope'), 'a')).toBeNull();
  });

  it('amounts: a tenth (at least 1), one more for another body, and two halves plus one that exceed the total together', () => {
    expect(refundAmounts(100)).toEqual({ small: 10, other: 11, overCapture: 51 });
    expect(refundAmounts(2500)).toEqual({ small: 250, other: 251, overCapture: 1251 });
    expect(refundAmounts(3)).toEqual({ small: 1, other: 2, overCapture: 2 });
    expect(refundAmounts(1)).toEqual({ small: 1, other: 2, overCapture: null });
    for (const total of [2, 3, 7, 100, 101]) {
      const { overCapture } = refundAmounts(total);
      expect(overCapture! <= total && 2 * overCapture! > total).toBe(true);
    }
  });

  it('replay: the first refund 2xx and not replayed, the retry its bytes replayed', () => {
    expect(evaluateRefundReplay(refunded(), refundReplayed())).toEqual({
      status: 'PASS',
      reason: `refund rfd_1: 201, ${REFUND.length} identical bytes, Idempotent-Replayed: true`,
    });
    expect(evaluateRefundReplay(problem(404), refundReplayed())).toEqual({ status: 'FAIL', reason: 'first refund: got 404, expected 2xx' });
    expect(evaluateRefundReplay(refundReplayed(), refundReplayed()).reason).toContain('the first refund under a fresh key says');
    expect(evaluateRefundReplay(refunded(), refunded()).reason).toBe('retry: no "Idempotent-Replayed: true"');
    expect(evaluateRefundReplay(refunded(), refundReplayed({}, REFUND.replace('rfd_1', 'rfd_2'))).reason).toContain('body differs');
  });

  it('other amount under a used refund key: 422 passes; refunding it or replaying the first fails', () => {
    expect(evaluateRefundOtherBody(problem(422))).toEqual({ status: 'PASS', reason: '422 for another amount under a used refund key' });
    expect(evaluateRefundOtherBody(refunded()).reason).toBe('got 201: another amount under a used refund key was refunded');
    expect(evaluateRefundOtherBody(refundReplayed()).reason).toBe("got 201 replaying the first amount's refund");
    expect(evaluateRefundOtherBody(problem(409)).reason).toBe('same refund key, other amount: got 409, expected 422');
    expect(evaluateRefundOtherBody(reset).reason).toContain('no answer');
  });

  it('concurrent copies: one refund, the others its replays or 409 + Retry-After, the follow-up replays it', () => {
    expect(evaluateRefundConcurrent([conflict('1'), refunded(), refundReplayed(), conflict('2')], refundReplayed())).toEqual({
      status: 'PASS',
      reason: 'one refund (rfd_1): 1 processed, 1 replayed, 2 x 409 + Retry-After; the follow-up replays it',
    });
  });

  it('concurrent copies: two refunds for one key fail, naming both ids', () => {
    const other = refunded(REFUND.replace('rfd_1', 'rfd_2'));
    const verdict = evaluateRefundConcurrent([refunded(), other], refundReplayed());
    expect(verdict.status).toBe('FAIL');
    expect(verdict.reason).toContain('2 different refunds for one key: rfd_1, rfd_2');
    expect(verdict.reason).toContain('2 of 2 were processed');
    // Marked replayed but another refund's id: still two refunds.
    expect(evaluateRefundConcurrent([refunded(), refundReplayed({}, REFUND.replace('rfd_1', 'rfd_2'))], refundReplayed()).reason).toContain(
      '2 different refunds for one key',
    );
  });

  it('concurrent copies: no refund, a 409 without Retry-After, a 422, a lost answer, or a follow-up not replayed fail', () => {
    expect(evaluateRefundConcurrent([conflict('1'), conflict('1')], refundReplayed()).reason).toContain('0 of 2 were processed');
    expect(evaluateRefundConcurrent([refunded(), conflict()], refundReplayed()).reason).toBe('copy: 409 without Retry-After');
    expect(evaluateRefundConcurrent([refunded(), problem(422)], refundReplayed()).reason).toBe(
      'a copy got 422: neither the refund replayed nor 409 + Retry-After',
    );
    expect(evaluateRefundConcurrent([refunded(), reset], refundReplayed()).reason).toContain('copy 2: no answer (ECONNRESET');
    expect(evaluateRefundConcurrent([refunded(), conflict('1')], problem(409)).reason).toContain('follow-up after all answered');
  });

  describe('over capture', () => {
    const FIRST = REFUND.replace('"amountMinor":10', '"amountMinor":51');
    const order = (refundedMinor: unknown) => answer(200, JSON.stringify({ id: 'ord_1', capturedMinor: 100, refundedMinor }));
    const observed = (overrides: Partial<OverCaptureObservation> = {}): OverCaptureObservation => ({
      total: 100,
      amount: 51,
      amountField: 'amountMinor',
      first: refunded(FIRST),
      second: problem(422),
      resource: order(51),
      refundedField: 'refundedMinor',
      replayOfFirst: null,
      ...overrides,
    });

    it('passes when the second is 422 and the resource shows the first alone', () => {
      expect(evaluateRefundOverCapture(observed())).toEqual({
        status: 'PASS',
        reason: 'the second refund 422; the resource shows refundedMinor 51 (the first alone)',
      });
    });

    it('fails when the second is accepted, refused otherwise, or the first did not succeed', () => {
      expect(evaluateRefundOverCapture(observed({ second: refunded(FIRST), resource: order(102) })).reason).toBe(
        "two refunds of 51 of 100: the second got 201: 102 refunded of 100; GET of the resource afterwards: refundedMinor 102, expected the first refund's 51 alone",
      );
      expect(evaluateRefundOverCapture(observed({ second: problem(409) })).reason).toBe(
        'two refunds of 51 of 100: the second: got 409, expected 422',
      );
      expect(evaluateRefundOverCapture(observed({ first: problem(422) }))).toEqual({
        status: 'FAIL',
        reason: 'two refunds of 51 of 100: the first: got 422, expected 2xx',
      });
    });

    it("fails when the resource's refunded amount moved, is missing, or the first refund's amount is not what was asked", () => {
      expect(evaluateRefundOverCapture(observed({ resource: order(0) })).reason).toContain('refundedMinor 0, expected');
      expect(evaluateRefundOverCapture(observed({ resource: order('51') })).reason).toBe(
        'GET of the resource afterwards: no number at "refundedMinor"',
      );
      expect(evaluateRefundOverCapture(observed({ resource: problem(404) })).reason).toBe(
        'GET of the resource afterwards: got 404, expected 200',
      );
      expect(evaluateRefundOverCapture(observed({ first: refunded(REFUND) })).reason).toBe(
        "the first refund's amountMinor is 10, it was asked for 51",
      );
    });

    it('without a resource GET: judged by the answers (the first shows its amount and replays unchanged)', () => {
      const byAnswers = observed({ resource: null, replayOfFirst: refundReplayed({}, FIRST) });
      expect(evaluateRefundOverCapture(byAnswers)).toEqual({
        status: 'PASS',
        reason: "the second refund 422; the first's answer shows 51 and replays unchanged (judged by the answers: no --resource-path)",
      });
      expect(evaluateRefundOverCapture({ ...byAnswers, replayOfFirst: refunded(FIRST) }).reason).toBe(
        'the first refund\'s key after the 422: no "Idempotent-Replayed: true"',
      );
      expect(
        evaluateRefundOverCapture({ ...byAnswers, first: refunded('{"id":"rfd_1"}'), replayOfFirst: refundReplayed({}, '{"id":"rfd_1"}') })
          .reason,
      ).toBe('the first refund\'s answer has no number at "amountMinor"');
    });
  });
});
