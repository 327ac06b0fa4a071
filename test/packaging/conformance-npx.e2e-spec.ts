// The conformance package's promise: a team runs the kit against its deployment
// with one npx command, without this repository. The package (built by
// `npm run build`, as `npm test` does first) is packed into a tarball, which is
// installed into a fresh project outside the repository and run there through
// npx against the built service as a real process; then run again with no
// project at all (`npx --package <tarball>`). No registry is needed: the
// package has no dependencies, so every npm command runs --offline.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Report } from '@idempotent-orders/idempotency-conformance';
import type { MongoClient } from 'mongodb';
import {
  ACME_SECRET,
  connectMongo,
  databasesOf,
  emptyDatabases,
  killAllServices,
  startService,
  type ServiceProcess,
} from '../support/service-process.js';

const GLOBEX_SECRET = 'globex-secret-0123456789';
const PACKAGE_DIR = fileURLToPath(new URL('../../packages/idempotency-conformance', import.meta.url));
const COMMAND_TIMEOUT_MS = 30_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * npm and npx as a team's machine has them: the Node that runs this test first on
 * PATH (the bin's `#!/usr/bin/env node` finds it), a cache of its own (nothing
 * shared with other runs, nothing fetched), and none of the npm_* variables
 * that `npm test` exported to this process.
 */
function npm(tool: 'npm' | 'npx', args: string[], cwd: string, cache: string, extra: Record<string, string> = {}): Promise<Ran> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !/^npm_/i.test(name)) env[name] = value;
  Object.assign(env, {
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    npm_config_cache: cache,
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    NO_COLOR: '1',
    ...extra,
  });
  return new Promise((resolve) => {
    execFile(tool, args, { cwd, env, timeout: COMMAND_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

const passing = (report: Report) => report.rows.filter((row) => row.status === 'PASS').map((row) => row.id);

describe('the conformance kit from its tarball, through npx', () => {
  let mongo: MongoClient;
  let service: ServiceProcess;
  let work: string;
  let cache: string;
  let tarball: string;
  let packed: Array<{ path: string; mode: number }>;

  beforeAll(async () => {
    mongo = await connectMongo();
    service = await startService({
      label: 'conformance-npx',
      env: { API_KEYS: `acme:${ACME_SECRET}:orders+admin,globex:${GLOBEX_SECRET}:orders+admin` },
    });
    work = mkdtempSync(join(tmpdir(), 'conformance-npx-'));
    cache = join(work, 'npm-cache');
    // --ignore-scripts: pack what `npm run build` built, without rebuilding the workspace's dist/ under the other tests.
    const pack = await npm('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], PACKAGE_DIR, cache);
    expect({ code: pack.code, stderr: pack.stderr }).toMatchObject({ code: 0 });
    const [entry] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string; mode: number }> }>;
    tarball = join(work, entry.filename);
    packed = entry.files;
  }, 60_000);

  afterAll(async () => {
    await killAllServices();
    if (mongo && service) await emptyDatabases(databasesOf(mongo, service));
    await mongo?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs the built kit, its README and an executable bin, and nothing else', () => {
    const paths = packed.map((file) => file.path);
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/cli.js', 'dist/index.js', 'dist/index.d.ts']));
    expect(paths.filter((path) => !(path === 'package.json' || path === 'README.md' || /^dist\/[a-z-]+\.(js|d\.ts)$/.test(path)))).toEqual(
      [],
    );
    expect(paths.filter((path) => path.includes('spec'))).toEqual([]);
    expect(packed.find((file) => file.path === 'dist/cli.js')!.mode & 0o111).toBe(0o111);
  });

  it('installs into a fresh project offline and passes every row with `npx --no-install idempotency-conformance`', async () => {
    const project = join(work, 'project');
    mkdirSync(project);
    expect((await npm('npm', ['init', '-y'], project, cache)).code).toBe(0);
    const install = await npm('npm', ['install', tarball, '--no-audit', '--no-fund', '--offline'], project, cache);
    expect({ code: install.code, stderr: install.stderr }).toEqual({ code: 0, stderr: '' });
    expect(statSync(join(project, 'node_modules', '.bin', 'idempotency-conformance')).mode & 0o111).toBe(0o111);

    const args = [
      '--base-url',
      service.baseUrl,
      '--token',
      ACME_SECRET,
      '--token-b',
      GLOBEX_SECRET,
      '--json',
      'out/report.json',
      '--junit',
      'out/junit.xml',
    ];
    const run = await npm('npx', ['--no-install', 'idempotency-conformance', ...args], project, cache);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    // No --refund-path: the four refund rows are SKIP (test/clients/conformance.e2e-spec.ts runs them).
    expect(run.stdout).toContain('20 rows: 16 PASS, 0 FAIL, 4 SKIP, 0 XFAIL (known) - no FAIL');

    const report = JSON.parse(readFileSync(join(project, 'out', 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({ tool: 'idempotency-conformance', baseUrl: service.baseUrl, conformant: true });
    expect(report.rows).toHaveLength(20);
    expect(passing(report)).toEqual(report.rows.map((row) => row.id).filter((id) => !id.startsWith('refund-')));
    expect(readFileSync(join(project, 'out', 'junit.xml'), 'utf8')).toContain('tests="20" failures="0" errors="0" skipped="4"');
  }, 60_000);

  it('runs with no project at all: `npx --package <tarball> idempotency-conformance`, tokens from the environment', async () => {
    const empty = join(work, 'empty');
    mkdirSync(empty);
    const run = await npm(
      'npx',
      ['--yes', '--offline', '--package', tarball, 'idempotency-conformance', '--base-url', service.baseUrl, '--json', 'report.json'],
      empty,
      cache,
      { CONFORMANCE_TOKEN: ACME_SECRET },
    );
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(readFileSync(join(empty, 'report.json'), 'utf8')) as Report;
    // No second tenant's key: second-tenant is SKIP, which does not fail the run; every other row passes.
    expect(report.conformant).toBe(true);
    expect(report.rows.filter((row) => row.status !== 'PASS').map((row) => [row.id, row.status])).toEqual([
      ['second-tenant', 'SKIP'],
      ['refund-replay', 'SKIP'],
      ['refund-other-body', 'SKIP'],
      ['refund-concurrent-duplicates', 'SKIP'],
      ['refund-over-capture', 'SKIP'],
    ]);
    expect(passing(report)).toHaveLength(15);
  }, 60_000);
});
