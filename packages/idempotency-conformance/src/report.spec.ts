import { describe, expect, it } from '@jest/globals';
import {
  applyExpectation,
  countRows,
  exitCodeFor,
  formatEvidence,
  formatRow,
  formatSummary,
  redactUrl,
  type Report,
  type RowResult,
} from './report.js';
import { ROW_IDS, ROWS } from './rows.js';
import { skipReason } from './run.js';

const row = (status: RowResult['status'], id = 'replay'): RowResult => ({
  id,
  title: 'same key + same body -> replay',
  clause: 'draft §2.6',
  status,
  reason: status === 'PASS' ? '201, 10 identical bytes' : 'retry: no "Idempotent-Replayed: true"',
  evidence: [{ label: 'retry', status: 201, headers: { location: '/v1/orders/ord_1' }, body: '{"id":"ord_1"}\n', bodyBytes: 15 }],
  durationMs: 12,
});

describe('known failures (--expect-fail)', () => {
  it('a FAIL becomes XFAIL with its reason kept', () => {
    expect(applyExpectation({ status: 'FAIL', reason: 'two keys' }, 'issue 18')).toEqual({
      status: 'XFAIL',
      reason: 'expected to fail (issue 18): two keys',
    });
  });

  it('a PASS becomes a FAIL, so the list cannot outlive the fix', () => {
    expect(applyExpectation({ status: 'PASS', reason: 'replayed' }, 'issue 18')).toEqual({
      status: 'FAIL',
      reason: 'expected to fail (issue 18) but passed - take it off --expect-fail: replayed',
    });
  });

  it('leaves SKIP and rows not listed alone', () => {
    expect(applyExpectation({ status: 'SKIP', reason: 'needs --token-b' }, 'x')).toEqual({ status: 'SKIP', reason: 'needs --token-b' });
    expect(applyExpectation({ status: 'FAIL', reason: 'r' }, undefined)).toEqual({ status: 'FAIL', reason: 'r' });
  });
});

describe('skipping', () => {
  const have = { firstUse: true, tokenB: true, refundPath: true, refundFirst: true, skip: undefined };
  it('--skip wins, then a missing second tenant, then a missing first use', () => {
    expect(skipReason({ requires: ['first-use', 'token-b'] }, { ...have, skip: 'no simulator' })).toBe('skipped by --skip: no simulator');
    expect(skipReason({ requires: ['first-use', 'token-b'] }, { ...have, tokenB: false })).toContain('needs --token-b');
    expect(skipReason({ requires: ['first-use'] }, { ...have, firstUse: false })).toContain('needs a first use');
    expect(skipReason({}, { ...have, firstUse: false, tokenB: false })).toBeNull();
  });

  it('the refund rows are SKIP without --refund-path, refund-other-body also without a first refund', () => {
    expect(skipReason({ requires: ['refund-path'] }, { ...have, refundPath: false })).toBe(
      'skipped: no --refund-path (a refund route with {id})',
    );
    expect(skipReason({ requires: ['refund-path', 'refund-first'] }, { ...have, refundPath: false })).toContain('no --refund-path');
    expect(skipReason({ requires: ['refund-path', 'refund-first'] }, { ...have, refundFirst: false })).toContain('needs a first refund');
    expect(skipReason({ requires: ['refund-path'] }, { ...have, refundFirst: false })).toBeNull();
    expect(skipReason({ requires: ['refund-path'] }, { ...have, refundPath: false, skip: 'x' })).toBe('skipped by --skip: x');
  });

  it('every refund row needs --refund-path, and no other row does', () => {
    expect(ROWS.filter((each) => each.requires?.includes('refund-path')).map((each) => each.id)).toEqual([
      'refund-replay',
      'refund-other-body',
      'refund-concurrent-duplicates',
      'refund-over-capture',
    ]);
  });

  it('every row id has exactly one row, in the documented order', () => {
    expect(ROWS.map((each) => each.id)).toEqual([...ROW_IDS]);
    expect(ROWS.every((each) => each.clause.length > 0 && each.title.length > 0)).toBe(true);
  });
});

describe('console output', () => {
  it('prints verdict, id, clause, result and each piece of evidence', () => {
    const lines = formatRow(row('FAIL')).split('\n');
    expect(lines[0]).toBe('FAIL  replay                 same key + same body -> replay');
    expect(lines[1]).toBe('      clause:   draft §2.6');
    expect(lines[2]).toBe('      result:   retry: no "Idempotent-Replayed: true"');
    expect(lines[3]).toBe('      - retry: 201 [location: /v1/orders/ord_1] | {"id":"ord_1"}\\x0a');
  });

  it('shows a request that got no answer, and cuts long bodies', () => {
    expect(formatEvidence({ label: 'first', error: 'ECONNRESET' })).toBe('first: no answer (ECONNRESET)');
    expect(formatEvidence({ label: 'big', status: 200, body: 'x'.repeat(200), bodyBytes: 5000 })).toBe(`big: 200 | ${'x'.repeat(100)}...`);
  });

  it('sums up, and exits 1 only when a row FAILed', () => {
    const rows = [row('PASS'), row('XFAIL', 'quoted-key'), row('SKIP', 'second-tenant')];
    const report: Report = {
      tool: 'idempotency-conformance',
      baseUrl: 'http://127.0.0.1:3000',
      path: '/v1/orders',
      runId: 'r',
      startedAt: '2026-11-30T12:00:00.000Z',
      durationMs: 1234,
      requests: 31,
      rows,
      counts: countRows(rows),
      conformant: true,
    };
    expect(formatSummary(report)).toBe(
      '3 rows: 1 PASS, 0 FAIL, 1 SKIP, 1 XFAIL (known) - no FAIL; 31 requests in 1.2 s against http://127.0.0.1:3000/v1/orders',
    );
    expect(exitCodeFor(report)).toBe(0);
    expect(exitCodeFor({ ...report, conformant: false })).toBe(1);
  });

  it('never writes credentials from the base URL', () => {
    expect(redactUrl('https://user:secret@staging.example/api/')).toBe('https://redacted@staging.example/api');
    expect(redactUrl('http://127.0.0.1:3000')).toBe('http://127.0.0.1:3000');
  });
});
