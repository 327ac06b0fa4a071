import type { Verdict, VerdictStatus } from './evaluate.js';
import type { Evidence } from './evidence.js';

/** XFAIL: a FAIL the caller declared known (--expect-fail); it does not fail the run. */
export type RowStatus = VerdictStatus | 'XFAIL';

/** One row's result: what it checks (title, clause), its status, why, and what it saw. */
export interface RowResult {
  id: string;
  title: string;
  clause: string;
  status: RowStatus;
  reason: string;
  evidence: Evidence[];
  durationMs: number;
}

/** One run against one deployment; the JSON report is this object. */
export interface Report {
  tool: 'idempotency-conformance';
  baseUrl: string;
  path: string;
  runId: string;
  startedAt: string;
  durationMs: number;
  requests: number;
  rows: RowResult[];
  counts: Record<RowStatus, number>;
  /** No row FAILed. */
  conformant: boolean;
}

/**
 * A known failure stays visible (XFAIL, with its evidence) without failing
 * the run; a known failure that now passes is a FAIL, so the list of known
 * failures cannot quietly outlive the fix.
 */
export function applyExpectation(verdict: Verdict, expectedFailure: string | undefined): { status: RowStatus; reason: string } {
  if (expectedFailure === undefined || verdict.status === 'SKIP') return verdict;
  if (verdict.status === 'FAIL') return { status: 'XFAIL', reason: `expected to fail (${expectedFailure}): ${verdict.reason}` };
  return { status: 'FAIL', reason: `expected to fail (${expectedFailure}) but passed - take it off --expect-fail: ${verdict.reason}` };
}

export function countRows(rows: RowResult[]): Record<RowStatus, number> {
  const counts: Record<RowStatus, number> = { PASS: 0, FAIL: 0, SKIP: 0, XFAIL: 0 };
  for (const row of rows) counts[row.status]++;
  return counts;
}

/** Credentials in a base URL (user:password@) never reach a report; no trailing slash before the path. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.username || parsed.password) {
    parsed.username = 'redacted';
    parsed.password = '';
  }
  return parsed.toString().replace(/\/$/, '');
}

/** The CLI's exit code: 0 when no row FAILed (XFAIL and SKIP do not fail a run), else 1. */
export const exitCodeFor = (report: Report): number => (report.conformant ? 0 : 1);

const BODY_SHOWN = 100;

/** One row for a terminal: verdict, id, title, clause, reason, then one line per piece of evidence. */
export function formatRow(row: RowResult): string {
  const lines = [
    `${row.status.padEnd(5)} ${row.id.padEnd(22)} ${row.title}`,
    `      clause:   ${row.clause}`,
    `      result:   ${row.reason}`,
  ];
  for (const item of row.evidence) lines.push(`      - ${formatEvidence(item)}`);
  return lines.join('\n');
}

export function formatEvidence(item: Evidence): string {
  if (item.error !== undefined) return `${item.label}: no answer (${item.error})`;
  const headers = Object.entries(item.headers ?? {}).map(([name, value]) => `${name}: ${value}`);
  const body =
    item.body === undefined ? '' : ` | ${printable(item.body.slice(0, BODY_SHOWN))}${(item.bodyBytes ?? 0) > BODY_SHOWN ? '...' : ''}`;
  return `${item.label}: ${item.status}${headers.length > 0 ? ` [${headers.join('; ')}]` : ''}${body}`;
}

/** The line printed after the rows: the counts, the verdict, requests, time and target. */
export function formatSummary(report: Report): string {
  const { PASS, FAIL, SKIP, XFAIL } = report.counts;
  const verdict = report.conformant ? 'no FAIL' : 'NOT CONFORMANT';
  const run = `${report.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s against ${report.baseUrl}${report.path}`;
  return `${report.rows.length} rows: ${PASS} PASS, ${FAIL} FAIL, ${SKIP} SKIP, ${XFAIL} XFAIL (known) - ${verdict}; ${run}`;
}

/** Control characters shown as \xNN: a body must not move the terminal's cursor or split a line. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point here
const printable = (text: string) => text.replace(/[\x00-\x1f\x7f]/g, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
