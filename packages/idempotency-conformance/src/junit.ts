// JUnit XML for CI systems. Hand-written on purpose: the format used here is
// about twenty lines (testsuites > testsuite > testcase with failure or
// skipped), and the one real hazard - escaping, and characters XML 1.0
// cannot carry at all (a body may contain any byte) - is handled below and
// unit-tested; a library would add a dependency for less than that.
import { formatEvidence, type Report, type RowResult } from './report.js';

const SUITE = 'idempotency conformance';

// Characters XML 1.0 allows (§2.2); anything else cannot even be escaped.
const NOT_XML_CHAR = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

export function escapeXml(text: string): string {
  return text
    .replace(NOT_XML_CHAR, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

export function renderJUnit(report: Report): string {
  const { FAIL, SKIP, XFAIL } = report.counts;
  const totals = `tests="${report.rows.length}" failures="${FAIL}" errors="0" skipped="${SKIP + XFAIL}" time="${seconds(report.durationMs)}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${SUITE}" ${totals}>`,
    `  <testsuite name="${escapeXml(`${SUITE}: ${report.baseUrl}${report.path}`)}" ${totals} timestamp="${report.startedAt}">`,
    '    <properties>',
    `      <property name="baseUrl" value="${escapeXml(report.baseUrl)}"/>`,
    `      <property name="path" value="${escapeXml(report.path)}"/>`,
    `      <property name="runId" value="${escapeXml(report.runId)}"/>`,
    '    </properties>',
    ...report.rows.map(renderCase),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function renderCase(row: RowResult): string {
  const name = escapeXml(`${row.id}: ${row.title}`);
  const details = escapeXml([`clause: ${row.clause}`, `result: ${row.reason}`, ...row.evidence.map(formatEvidence)].join('\n'));
  const open = `    <testcase classname="conformance" name="${name}" time="${seconds(row.durationMs)}">`;
  const message = escapeXml(row.reason);
  const outcome =
    row.status === 'FAIL'
      ? `      <failure message="${message}" type="FAIL">${details}</failure>`
      : row.status === 'PASS'
        ? `      <system-out>${details}</system-out>`
        : `      <skipped message="${escapeXml(row.status === 'XFAIL' ? `XFAIL: ${row.reason}` : row.reason)}"/>\n      <system-out>${details}</system-out>`;
  return [open, outcome, '    </testcase>'].join('\n');
}
