/**
 * The docs cannot rot: every operation page of docs/api/ shows its requests
 * as a script (docs/api/requests/<page>.sh, quoted whole in the page's "Run
 * it" block), and each `req` line of it states the answer the docs promise -
 * status and fields. This runs every script against the real service (the
 * production pipeline, in process, on a real port) as a person would, and
 * then checks what the requests left in the database.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findViolations } from '../support/invariants.js';
import { API_KEYS, startApp, type TestApp } from '../support/test-app.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = ['orders', 'capture-void', 'refunds', 'cancel-by-key', 'async-payments', 'webhooks-out'] as const;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('docs/api: every documented request, against the service', () => {
  let t: TestApp;
  let baseUrl: string;
  // The pages' scripts run side by side (each its own keys), then each test reads its own run.
  const runs = new Map<string, Promise<Run>>();

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_docs_requests' });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    for (const page of PAGES) runs.set(page, run(`${page}.sh`));
  });

  afterAll(async () => {
    await t?.close();
  });

  /** One script of docs/api/requests, as a person runs it (bash, curl, node), never rejects. */
  function run(script: string, env: Record<string, string> = {}): Promise<Run> {
    return promisify(execFile)('bash', [`docs/api/requests/${script}`], {
      cwd: ROOT,
      // The acme tenant of the test app has the scopes the dev tenant has (orders+admin+privacy).
      env: { ...process.env, BASE_URL: baseUrl, TOKEN: API_KEYS.acme, RUN: `docs-${script}-${Date.now()}`, ...env },
      timeout: 45_000,
    }).then(
      (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
      (error: Run) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );
  }

  for (const page of PAGES) {
    it(`${page}.md: its script is the one the page shows, and every answer is the documented one`, async () => {
      const markdown = readFileSync(`${ROOT}docs/api/${page}.md`, 'utf8');
      const script = readFileSync(`${ROOT}docs/api/requests/${page}.sh`, 'utf8');
      // The page quotes the script whole, so what a reader sees is what runs here.
      expect(markdown).toContain(`(requests/${page}.sh)`);
      expect(markdown).toContain(`\`\`\`bash\n${script}\`\`\``);

      const result = await runs.get(page)!;
      expect(result.stderr).not.toContain('MISMATCH');
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`${page}.sh: every answer as documented`);
      // Every documented request ran: one "> METHOD path" line per `req` (helpers count once per call).
      const sent = result.stdout.split('\n').filter((line) => /^> [A-Z]+ \//.test(line)).length;
      expect(sent).toBeGreaterThanOrEqual(script.split('\n').filter((line) => /^\s*req \d{3}/.test(line)).length);
    });
  }

  it('reconciliation.md: after every flow above, the CLI finds the books matching, as the page shows', async () => {
    const markdown = readFileSync(`${ROOT}docs/api/reconciliation.md`, 'utf8');
    const script = readFileSync(`${ROOT}docs/api/requests/reconciliation.sh`, 'utf8');
    expect(markdown).toContain('(requests/reconciliation.sh)');
    expect(markdown).toContain(`\`\`\`bash\n${script}\`\`\``);
    await Promise.all(runs.values());
    // The CLI reads the service's configuration: this test app's databases on the run's replica set.
    // No MONGODB_URI: the script finds the store as a newcomer's would, in the shared store's file (`npm run store`).
    const storeFile = join(mkdtempSync(join(tmpdir(), 'docs-store-')), 'embedded-store.json');
    writeFileSync(storeFile, JSON.stringify({ uri: process.env.MONGODB_URI, pid: process.pid }));
    const result = await run('reconciliation.sh', {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      MONGODB_DB_NAME: 'test_docs_requests',
      PAYMENT_SIMULATOR_DB_NAME: 'test_docs_requests_psp',
      MONGODB_URI: '',
      EMBEDDED_STORE_FILE: storeFile,
    });
    expect(result.stderr).not.toContain('MISMATCH');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('reconciliation.sh: every answer as documented');
    expect(result.stdout).toMatch(/^< exit 0 \{/m);
  });

  it('leaves the database as the docs say: one charge per key, refunds within the captured amount, nothing half-done', async () => {
    const orders = await t.db
      .collection<{ _id: string; state: string; capturedMinor: number; refundedMinor: number }>('orders')
      .find()
      .toArray();
    expect(orders.length).toBeGreaterThan(0);
    for (const order of orders) expect(order.refundedMinor ?? 0).toBeLessThanOrEqual(order.capturedMinor ?? 0);
    // The replays of the docs made nothing twice: one order per key that created one.
    await Promise.all(runs.values());
    const replayed = await t.db.collection('orders').countDocuments({ 'items.0.sku': 'sku_1', amountMinor: 2500, capture: 'automatic' });
    expect(replayed).toBe(2); // orders.sh and refunds.sh create one each, each sent twice
    expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb })).toEqual([]);
  });

  it('the checker fails a script when an answer differs from the docs (so the tests above can fail)', async () => {
    const wrong = await promisify(execFile)(
      'bash',
      ['-c', 'source docs/api/requests/lib.sh; req 201 state=saved -- GET /v1/orders/ord_000000000000000000000000'],
      { cwd: ROOT, env: { ...process.env, BASE_URL: baseUrl, TOKEN: API_KEYS.acme } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: Run) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('MISMATCH: status 404, the docs say 201; state is undefined, the docs say saved');
  });
});

describe('scripts/sign-webhook.mjs', () => {
  it('signs with the secret the service verifies with: WEBHOOK_SECRETS first, else the dev secret', async () => {
    const { DEV_WEBHOOK_SECRET } = await import('../../src/config/webhooks.config.js');
    const signer = (await import('../../scripts/sign-webhook.mjs' as string)) as {
      DEV_WEBHOOK_SECRET: string;
      signingSecret(env: Record<string, string>): string;
    };
    expect(signer.DEV_WEBHOOK_SECRET).toBe(DEV_WEBHOOK_SECRET);
    expect(signer.signingSecret({})).toBe(DEV_WEBHOOK_SECRET);
    expect(signer.signingSecret({ WEBHOOK_SECRETS: ' whsec_bmV3, whsec_b2xk' })).toBe('whsec_bmV3');
  });
});
