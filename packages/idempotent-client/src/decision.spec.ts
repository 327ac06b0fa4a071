import { describe, expect, it } from '@jest/globals';
import { decide, type AttemptOutcome } from './decision.js';

const NOW = Date.parse('2026-11-30T12:00:00Z');

function answer(status: number, body: unknown = undefined, headers: Record<string, string> = {}): AttemptOutcome {
  return { kind: 'response', status, headers: new Headers(headers), body };
}
const problem = (status: number, code?: string, extra: Record<string, unknown> = {}) => ({ status, code, ...extra });

describe('decide: without guidance fields, the status decides', () => {
  it('no answer at all (reset, refused, timeout) is retried with the same key', () => {
    const reset = new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
    expect(decide({ kind: 'no-response', error: reset }, NOW)).toEqual({
      action: 'retry-same-key',
      source: 'status',
      reason: 'no answer (fetch failed: ECONNRESET)',
    });
    expect(decide({ kind: 'no-response', error: new DOMException('timed out', 'TimeoutError') }, NOW)).toMatchObject({
      action: 'retry-same-key',
      reason: 'no answer (TimeoutError: timed out)',
    });
  });

  it.each([200, 201, 202, 204])('%i is done; replayed only with Idempotent-Replayed: true', (status) => {
    expect(decide(answer(status, {}), NOW)).toEqual({ action: 'done', replayed: false });
    expect(decide(answer(status, {}, { 'idempotent-replayed': 'true' }), NOW)).toEqual({ action: 'done', replayed: true });
    expect(decide(answer(status, {}, { 'idempotent-replayed': 'false' }), NOW)).toEqual({ action: 'done', replayed: false });
  });

  it.each([408, 425, 429, 500, 502, 503, 504])('%i is retried with the same key, Retry-After read', (status) => {
    expect(decide(answer(status, problem(status, 'x')), NOW)).toEqual({
      action: 'retry-same-key',
      source: 'status',
      reason: `${status} x`,
      retryAfterMs: undefined,
      problem: { status, code: 'x' },
    });
    expect(decide(answer(status, problem(status), { 'retry-after': '3' }), NOW)).toMatchObject({ retryAfterMs: 3000 });
    // A body that is not JSON (a proxy's HTML page) changes nothing.
    expect(decide(answer(status, '<html>bad gateway</html>'), NOW)).toMatchObject({ action: 'retry-same-key', problem: undefined });
  });

  it('409 idempotency_key_in_use is retried; 409 idempotency_key_expired stops with its Location; any other 409 stops', () => {
    expect(decide(answer(409, problem(409, 'idempotency_key_in_use'), { 'retry-after': '1' }), NOW)).toMatchObject({
      action: 'retry-same-key',
      retryAfterMs: 1000,
    });
    expect(decide(answer(409, problem(409, 'idempotency_key_expired'), { location: '/v1/orders/ord_1' }), NOW)).toEqual({
      action: 'stop',
      source: 'status',
      reason: '409 idempotency_key_expired: done before, do not repeat',
      newKeySafe: false,
      problem: { status: 409, code: 'idempotency_key_expired' },
      location: '/v1/orders/ord_1',
    });
    expect(decide(answer(409, problem(409, 'idempotency_lease_active')), NOW)).toMatchObject({ action: 'stop', newKeySafe: false });
    expect(decide(answer(409, 'conflict'), NOW)).toMatchObject({ action: 'stop', newKeySafe: false, reason: '409' });
  });

  it.each<[number, string | undefined, boolean]>([
    [400, 'validation_failed', true],
    [400, 'idempotency_key_invalid', true],
    [422, 'idempotency_key_reused', true],
    [401, 'unauthorized', false],
    [402, 'card_declined', false],
    [403, 'insufficient_scope', false],
    [404, 'order_not_found', false],
    [410, 'response_erased', false],
    [413, undefined, false],
    [422, 'amount_out_of_range', false],
    [301, undefined, false],
    [501, undefined, false],
    [505, undefined, false],
  ])('%i %s stops; newKeySafe %s', (status, code, newKeySafe) => {
    expect(decide(answer(status, problem(status, code)), NOW)).toMatchObject({ action: 'stop', source: 'status', newKeySafe });
  });
});

describe('decide: the guidance fields come first', () => {
  it('retryable: true retries whatever the status, retryable: false stops whatever the status', () => {
    expect(decide(answer(400, problem(400, 'x', { retryable: true, reuseKey: true, newKeySafe: false })), NOW)).toMatchObject({
      action: 'retry-same-key',
      source: 'guidance',
      reason: '400 x: retryable',
    });
    expect(decide(answer(503, problem(503, 'x', { retryable: false, reuseKey: true, newKeySafe: false })), NOW)).toMatchObject({
      action: 'stop',
      source: 'guidance',
      newKeySafe: false,
    });
  });

  it('newKeySafe is taken as given, either way', () => {
    expect(decide(answer(409, problem(409, 'x', { retryable: false, newKeySafe: true })), NOW)).toMatchObject({ newKeySafe: true });
    expect(decide(answer(400, problem(400, 'x', { retryable: false, newKeySafe: false })), NOW)).toMatchObject({ newKeySafe: false });
    // Without `retryable` the status decides, but a given newKeySafe still counts.
    expect(decide(answer(404, problem(404, 'x', { newKeySafe: true })), NOW)).toMatchObject({ source: 'status', newKeySafe: true });
  });

  it('a field that is not a boolean is absent: the status decides', () => {
    expect(decide(answer(503, problem(503, 'x', { retryable: 'false', newKeySafe: 'yes' })), NOW)).toMatchObject({
      action: 'retry-same-key',
      source: 'status',
      problem: { status: 503, code: 'x' },
    });
    expect(decide(answer(403, problem(403, 'x', { retryable: 1 })), NOW)).toMatchObject({
      action: 'stop',
      source: 'status',
      newKeySafe: false,
    });
  });

  it("without newKeySafe, a stop falls back on the status's answer", () => {
    expect(decide(answer(422, problem(422, 'idempotency_key_reused', { retryable: false })), NOW)).toMatchObject({ newKeySafe: true });
    expect(decide(answer(402, problem(402, 'card_declined', { retryable: false })), NOW)).toMatchObject({ newKeySafe: false });
  });

  it('409 idempotency_key_expired as the server guides it: stop, not new-key-safe, its Location', () => {
    const body = problem(409, 'idempotency_key_expired', { retryable: false, reuseKey: false, newKeySafe: false });
    expect(decide(answer(409, body, { location: '/v1/orders/ord_9' }), NOW)).toMatchObject({
      action: 'stop',
      source: 'guidance',
      newKeySafe: false,
      location: '/v1/orders/ord_9',
    });
  });

  it("a retryable answer's Retry-After date is read against its own Date header", () => {
    const headers = { 'retry-after': 'Mon, 30 Nov 2026 12:00:05 GMT', date: 'Mon, 30 Nov 2026 12:00:03 GMT' };
    expect(decide(answer(503, problem(503, 'x', { retryable: true }), headers), NOW)).toMatchObject({ retryAfterMs: 2000 });
    expect(decide(answer(503, problem(503, 'x'), { 'retry-after': headers['retry-after'] }), NOW)).toMatchObject({ retryAfterMs: 5000 });
  });
});
