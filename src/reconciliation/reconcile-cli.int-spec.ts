import { describe, expect, it } from '@jest/globals';
import { reconcileCli } from '../../test/support/reconcile-cli.js';
import { configurationProblems } from '../config/configuration.js';

/**
 * The reconcile CLI (src/reconcile.cli.ts, built) is a read-only report: it
 * needs the store and nothing the service needs to serve - no API keys, no
 * record keys, no webhook secrets - and a bad setting is one line on stderr,
 * never a stack.
 */
describe('reconcile CLI settings', () => {
  const from = new Date(Date.now() - 3600_000);
  const to = new Date(Date.now() + 3600_000);
  /** A production deployment with the store and none of the service's secrets. */
  const storeOnly = {
    NODE_ENV: 'production',
    API_KEYS: '',
    IDEMPOTENCY_ENCRYPTION_KEY: '',
    IDEMPOTENCY_DECRYPTION_KEYS: '',
    PRIVACY_DIGEST_KEY: '',
    WEBHOOK_SECRETS: '',
    METRICS_TOKEN: '',
  };

  it('reports with the store alone, where the service itself would refuse to start', async () => {
    // The same environment the service would refuse: the report does not lean on a setting the test forgot.
    const refused = configurationProblems({ ...process.env, ...storeOnly }).join('\n');
    expect(refused).toMatch(/API_KEYS/);
    expect(refused).toMatch(/IDEMPOTENCY_ENCRYPTION_KEY/);
    const run = await reconcileCli('test_reconcile_cli_store_only', from, to, storeOnly);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ compared: 0, mismatches: [] });
  });

  it.each([
    ['a setting it reads that is not valid', { MONGODB_SERVER_SELECTION_TIMEOUT_MS: 'soon' }, /MONGODB_SERVER_SELECTION_TIMEOUT_MS/],
    ['an unknown provider', { PAYMENT_PROVIDER: 'paypal' }, /PAYMENT_PROVIDER: must be simulator or stripe/],
  ])('%s: exit 2 and one line, no stack', async (_, env, says) => {
    const run = await reconcileCli('test_reconcile_cli_refused', from, to, { ...storeOnly, ...env });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(says);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
