import { describe, expect, it } from '@jest/globals';
import { escapeXml, renderJUnit } from './junit.js';
import { countRows, type Report, type RowResult } from './report.js';

function row(id: string, status: RowResult['status'], reason: string, body = '{"id":"ord_1"}'): RowResult {
  return {
    id,
    title: `${id} -> 400`,
    clause: 'draft §2.7',
    status,
    reason,
    evidence: [{ label: 'answer', status: 400, body }],
    durationMs: 250,
  };
}

function report(rows: RowResult[]): Report {
  const counts = countRows(rows);
  return {
    tool: 'idempotency-conformance',
    baseUrl: 'http://127.0.0.1:3000',
    path: '/v1/orders',
    runId: 'abc',
    startedAt: '2026-11-30T12:00:00.000Z',
    durationMs: 1500,
    requests: 3,
    rows,
    counts,
    conformant: counts.FAIL === 0,
  };
}

describe('JUnit XML', () => {
  it('escapes markup and replaces characters XML 1.0 cannot carry', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
    expect(escapeXml('bell\u0007 nul\u0000 ok\t\n')).toBe('bell\uFFFD nul\uFFFD ok\t\n');
    expect(escapeXml('emoji \u{1F600} kept, lone \uD800 not')).toBe('emoji \u{1F600} kept, lone \uFFFD not');
  });

  it('counts FAIL as failures and SKIP and XFAIL as skipped', () => {
    const xml = renderJUnit(
      report([
        row('missing-key', 'PASS', 'ok'),
        row('replay', 'FAIL', 'no header'),
        row('quoted-key', 'XFAIL', 'issue 18'),
        row('second-tenant', 'SKIP', 'needs --token-b'),
      ]),
    );
    expect(xml).toContain('<testsuites name="idempotency conformance" tests="4" failures="1" errors="0" skipped="2" time="1.500">');
    expect(xml.match(/<testcase /g)).toHaveLength(4);
    expect(xml).toContain('<failure message="no header" type="FAIL">');
    expect(xml).toContain('<skipped message="XFAIL: issue 18"/>');
    expect(xml).toContain('<skipped message="needs --token-b"/>');
    expect(xml).toContain('timestamp="2026-11-30T12:00:00.000Z"');
  });

  it('puts the evidence in the case, escaped, and stays well-formed whatever the body holds', () => {
    const xml = renderJUnit(report([row('replay', 'FAIL', 'body <differs> & more', '</failure><injected/>\u0001')]));
    expect(xml).toContain('message="body &lt;differs&gt; &amp; more"');
    expect(xml).toContain('answer: 400 | &lt;/failure&gt;&lt;injected/&gt;\\x01');
    expect(xml).not.toContain('<injected/>');
    // Every element opened is closed, in order: a cheap well-formedness check without a parser dependency.
    const tags = [...xml.replace(/<\?xml[^>]*\?>/, '').matchAll(/<(\/?)([a-z-]+)[^>]*?(\/?)>/g)];
    const open: string[] = [];
    for (const [, closing, name, selfClosing] of tags) {
      if (selfClosing) continue;
      if (closing) expect(open.pop()).toBe(name);
      else open.push(name);
    }
    expect(open).toEqual([]);
  });
});
