// The conformance kit (@idempotent-orders/idempotency-conformance) against the built service as a real
// process on a real port, as a team runs it against its deployment; then
// against "copies with one rule broken" (a proxy that breaks the rule on the
// wire), to show each broken rule FAILs its rows and no others.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MongoClient } from 'mongodb';
import { runConformance, type Report, type RowId } from '@idempotent-orders/idempotency-conformance';
import { findViolations } from '../support/invariants.js';
import {
  ignoreTenant,
  startRuleBreakingProxy,
  storeServerErrors,
  stripReplayedHeader,
  type BrokenRule,
} from '../support/rule-breaking-proxy.js';
import {
  ACME_SECRET,
  connectMongo,
  databasesOf,
  emptyDatabases,
  killAllServices,
  startService,
  type Databases,
  type ServiceProcess,
} from '../support/service-process.js';

const GLOBEX_SECRET = 'globex-secret-0123456789';
// The package's bin as built by `npm run build` (build:packages); test/packaging/conformance-npx.e2e-spec.ts runs it from its tarball.
const CLI_JS = fileURLToPath(new URL('../../packages/idempotency-conformance/dist/cli.js', import.meta.url));

/**
 * The service's honest state today: none. A row listed here is reported
 * XFAIL with its evidence, and the day it passes the kit turns it into a
 * FAIL, so the list cannot outlive a fix (the package's report.spec.ts tests that).
 */
const KNOWN_FAILURES: Partial<Record<RowId, string>> = {};

const EXPECTED: Record<RowId, string> = {
  'missing-key': 'PASS',
  'malformed-key': 'PASS',
  'key-sent-twice': 'PASS',
  'quoted-key': 'PASS',
  'first-use': 'PASS',
  replay: 'PASS',
  'reordered-json': 'PASS',
  'other-body': 'PASS',
  'client-guidance': 'PASS',
  'get-resource': 'PASS',
  'concurrent-duplicates': 'PASS',
  'lost-response': 'PASS',
  'provider-outage': 'PASS',
  'second-tenant': 'PASS',
  unauthenticated: 'PASS',
  'refused-body': 'PASS',
  'refund-replay': 'PASS',
  'refund-other-body': 'PASS',
  'refund-concurrent-duplicates': 'PASS',
  'refund-over-capture': 'PASS',
};

/** The refund rows run on this service's refund route; the over-capture row reads the order afterwards. */
const REFUNDS = { refundPath: '/v1/orders/{id}/refunds', resourcePath: '/v1/orders/{id}' };

const statuses = (report: Report) => Object.fromEntries(report.rows.map((row) => [row.id, row.status]));

describe('the conformance kit', () => {
  let mongo: MongoClient;
  let service: ServiceProcess;
  let dbs: Databases;

  beforeAll(async () => {
    mongo = await connectMongo();
    service = await startService({
      label: 'conformance',
      env: { API_KEYS: `acme:${ACME_SECRET}:orders+admin,globex:${GLOBEX_SECRET}:orders+admin` },
    });
    dbs = databasesOf(mongo, service);
  });
  afterAll(async () => {
    await killAllServices();
    if (dbs) await emptyDatabases(dbs);
    await mongo?.close();
  });

  const kit = (baseUrl: string, extra: { junitPath?: string; jsonPath?: string } = {}) =>
    runConformance({ baseUrl, token: ACME_SECRET, tokenB: GLOBEX_SECRET, expectFail: KNOWN_FAILURES, ...REFUNDS, ...extra });

  /** The orders a tenant made under one row's keys (keys are conformance-<run>-<label>-<uuid>). */
  async function ordersOf(report: Report, label: string, tenant = 'acme') {
    const orders = await dbs.db.collection('orders').find({ tenant }).toArray();
    return orders.filter((order) => String(order.idempotency?.recordId).includes(`conformance-${report.runId}-${label}-`));
  }

  describe('against the real service', () => {
    let dir: string;
    let report: Report;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'conformance-'));
      report = await kit(service.baseUrl, { junitPath: join(dir, 'junit.xml'), jsonPath: join(dir, 'report.json') });
    });

    it('passes every row', () => {
      expect(statuses(report)).toEqual(EXPECTED);
      expect(report.conformant).toBe(true);
      expect(report.requests).toBeLessThanOrEqual(75);
    });

    it('writes the JSON and JUnit reports', () => {
      expect(JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'))).toEqual(report);
      expect(readFileSync(join(dir, 'junit.xml'), 'utf8')).toContain('tests="20" failures="0" errors="0" skipped="0"');
    });

    it('leaves one order per key behind it, as the database shows', async () => {
      for (const label of ['first', 'concurrent', 'lost']) {
        const orders = await ordersOf(report, label);
        expect({ label, states: orders.map((order) => order.state) }).toEqual({ label, states: ['saved'] });
      }
      // second-tenant: globex's use of acme's first key made globex's own order.
      expect((await ordersOf(report, 'first', 'globex')).map((order) => order.state)).toEqual(['saved']);
      const [outage] = await ordersOf(report, 'outage');
      expect(outage.state).not.toBe('saved');
      expect(
        await dbs.simulatorDb
          .collection('charges')
          .countDocuments({ _id: `charge:${String(outage._id as unknown as string)}` as never, status: 'succeeded' }),
      ).toBe(0);
      // "k" and k are one key: one order.
      expect((await ordersOf(report, 'quoted')).map((order) => order.state)).toEqual(['saved']);
      expect(await findViolations(dbs)).toEqual([]);
    });
  });

  describe("against a copy with one rule broken, FAILs that rule's rows and only those", () => {
    it.each<[string, () => BrokenRule, RowId[]]>([
      [
        'the replay sent without Idempotent-Replayed',
        stripReplayedHeader,
        [
          'replay',
          'reordered-json',
          'quoted-key',
          'concurrent-duplicates',
          'lost-response',
          'refused-body',
          'refund-replay',
          'refund-concurrent-duplicates',
        ],
      ],
      ['a 503 stored and replayed', storeServerErrors, ['provider-outage']],
      ['keys not scoped per tenant', () => ignoreTenant(GLOBEX_SECRET, ACME_SECRET), ['second-tenant']],
    ])('%s', async (_, rule, failing) => {
      const proxy = await startRuleBreakingProxy(service.baseUrl, rule());
      try {
        const report = await kit(proxy.baseUrl);
        expect(statuses(report)).toEqual({ ...EXPECTED, ...Object.fromEntries(failing.map((id) => [id, 'FAIL'])) });
        expect(report.conformant).toBe(false);
      } finally {
        await proxy.close();
      }
    });
  });

  describe('the command line', () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const dir = mkdtempSync(join(tmpdir(), 'conformance-cli-'));
        const child = spawn(process.execPath, [CLI_JS, ...args], {
          cwd: dir,
          env: { PATH: process.env.PATH, CONFORMANCE_TOKEN: ACME_SECRET },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const knownFailures = Object.entries(KNOWN_FAILURES).flatMap(([id, why]) => ['--expect-fail', `${id}:${why}`]);

    it('exits 0 when no row fails, and prints every row and the summary', async () => {
      const run = await cli(['--base-url', service.baseUrl, '--token-b', GLOBEX_SECRET, ...knownFailures]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^PASS {2}quoted-key {13}/m);
      expect(run.stdout).toMatch(/^PASS {2}lost-response {10}/m);
      // No --refund-path here: the four refund rows are SKIP.
      expect(run.stdout).toContain('20 rows: 16 PASS, 0 FAIL, 4 SKIP, 0 XFAIL (known) - no FAIL');
    });

    it('exits 1 when a row fails, 2 on a usage error', async () => {
      const proxy = await startRuleBreakingProxy(service.baseUrl, storeServerErrors());
      try {
        const broken = await cli(['--base-url', proxy.baseUrl, ...knownFailures]);
        expect(broken.code).toBe(1);
        expect(broken.stdout).toMatch(
          /^FAIL {2}provider-outage .*\n.*\n {6}result: {3}retry of the outage: a replayed 503: a transient failure was stored/m,
        );
        expect(broken.stdout).toContain('SKIP  second-tenant');
      } finally {
        await proxy.close();
      }
      const usage = await cli(['--base-url', service.baseUrl, '--skip', 'replays']);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--skip: unknown row "replays"');
    });
  });
});
