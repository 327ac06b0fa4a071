// The programmatic entry: runConformance(options) runs every row in order
// against one deployment and returns the report (and writes it, when paths
// are given). Nothing here knows the service's code: only HTTP.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { defaultOrderBody, defaultRefundBody, deriveBodies, refundBodyFor, type Bodies, type Json } from './bodies.js';
import type { Verdict } from './evaluate.js';
import { KitHttp } from './http.js';
import { renderJUnit } from './junit.js';
import { DEFAULTS, resolveOptions, UsageError, type ConformanceOptions, type ResolvedOptions } from './options.js';
import { applyExpectation, countRows, redactUrl, type Report, type RowResult } from './report.js';
import { ROWS, type RefundSettings, type Row, type RowContext, type RowOutcome } from './rows.js';

/**
 * Runs every row, in order, against one deployment and resolves to the report
 * (writing the JUnit XML and JSON reports when their paths are given). A row that
 * cannot finish is a FAIL saying why, never a rejection; an invalid option
 * rejects with UsageError before the first request is sent.
 */
export async function runConformance(input: ConformanceOptions): Promise<Report> {
  const options = resolveOptions(input);
  const runId = randomBytes(6).toString('hex');
  const started = Date.now();
  const ctx = createContext(options, runId);
  const rows: RowResult[] = [];
  for (const row of ROWS) {
    const result = await runRow(row, ctx, options);
    rows.push(result);
    options.onRow?.(result);
  }
  const counts = countRows(rows);
  const report: Report = {
    tool: 'idempotency-conformance',
    baseUrl: redactUrl(options.baseUrl),
    path: options.path,
    runId,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    requests: ctx.http.requestCount,
    rows,
    counts,
    conformant: counts.FAIL === 0,
  };
  await writeReports(report, options);
  return report;
}

function createContext(options: ResolvedOptions, runId: string): RowContext {
  return {
    http: new KitHttp(options.baseUrl, options.timeoutMs, options.maxRequests),
    settings: {
      baseUrl: options.baseUrl,
      path: options.path,
      token: options.token,
      tokenB: options.tokenB,
      concurrency: options.concurrency,
      keyStatusPath: options.keyStatusPath,
      timeoutMs: options.timeoutMs,
      refund: refundSettingsFor(options),
    },
    bodies: bodiesFor(options, runId),
    // Random per row and run: a shared environment's earlier records (or another team's) are never hit.
    key: (label) => `conformance-${runId}-${label}-${randomUUID()}`,
    firstUse: null,
    refundFirst: null,
  };
}

function refundSettingsFor(options: ResolvedOptions): RefundSettings | null {
  if (options.refundPath === null) return null;
  const body: Json = options.refundBody ?? defaultRefundBody(options.refundAmountField, DEFAULTS.refundReason);
  try {
    refundBodyFor(body, options.refundAmountField, 1);
  } catch (error) {
    throw new UsageError(`refund body: ${(error as Error).message} (--refund-amount-field ${options.refundAmountField})`);
  }
  return {
    pathTemplate: options.refundPath,
    body,
    amountField: options.refundAmountField,
    total: options.refundTotal,
    resourcePath: options.resourcePath,
    refundedField: options.refundedField,
  };
}

function bodiesFor(options: ResolvedOptions, runId: string): Bodies {
  try {
    return deriveBodies(
      {
        body: options.body ?? defaultOrderBody(runId),
        otherBody: options.otherBody,
        refusedBody: options.refusedBody,
        varyField: options.varyField,
        outageBody: options.outageBody,
        outageField: options.outageField,
        outageValue: options.outageValue,
      },
      options.skip['provider-outage'] === undefined,
    );
  } catch (error) {
    throw new UsageError(`bodies: ${(error as Error).message}`);
  }
}

async function runRow(row: Row, ctx: RowContext, options: ResolvedOptions): Promise<RowResult> {
  const started = Date.now();
  const skipped = skipReason(row, {
    firstUse: ctx.firstUse !== null,
    tokenB: options.tokenB !== null,
    refundPath: options.refundPath !== null,
    refundFirst: ctx.refundFirst !== null,
    skip: options.skip[row.id],
  });
  const outcome: RowOutcome =
    skipped !== null ? { verdict: { status: 'SKIP', reason: skipped }, evidence: [] } : await row.run(ctx).catch(crashed);
  const { status, reason } = applyExpectation(outcome.verdict, options.expectFail[row.id]);
  return { id: row.id, title: row.title, clause: row.clause, status, reason, evidence: outcome.evidence, durationMs: Date.now() - started };
}

/** A row that throws (budget exhausted, proxy could not listen) is a FAIL that says why, not a crash of the run. */
function crashed(error: unknown): RowOutcome {
  const verdict: Verdict = { status: 'FAIL', reason: `the row could not finish: ${(error as Error)?.message ?? String(error)}` };
  return { verdict, evidence: [] };
}

export function skipReason(
  row: Pick<Row, 'requires'>,
  have: { firstUse: boolean; tokenB: boolean; refundPath: boolean; refundFirst: boolean; skip: string | undefined },
): string | null {
  if (have.skip !== undefined) return `skipped by --skip: ${have.skip}`;
  if (row.requires?.includes('refund-path') && !have.refundPath) return 'skipped: no --refund-path (a refund route with {id})';
  if (row.requires?.includes('refund-first') && !have.refundFirst) return 'needs a first refund that got a 2xx (see row refund-replay)';
  if (row.requires?.includes('token-b') && !have.tokenB) return "needs --token-b (a second tenant's API key)";
  if (row.requires?.includes('first-use') && !have.firstUse) return 'needs a first use that got a 2xx (see row first-use)';
  return null;
}

async function writeReports(report: Report, options: ResolvedOptions): Promise<void> {
  const files: Array<[string | undefined, string]> = [
    [options.junitPath, renderJUnit(report)],
    [options.jsonPath, `${JSON.stringify(report, null, 2)}\n`],
  ];
  for (const [path, content] of files) {
    if (!path) continue;
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}
