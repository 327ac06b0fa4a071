import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { configurationProblems as problemsOf, DEV_WEBHOOK_SECRET, loadConfiguration } from './configuration.js';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** Test mode with a real store URI: what every e2e file boots with (dev defaults allowed). */
const REAL_STORE = { MONGODB_URI: 'mongodb://db.internal:27017/?replicaSet=rs0' };

describe('webhook and processing settings', () => {
  it('defaults to the dev secret locally, 5 minutes of tolerance, a 15 minute processing bound and no simulator deliveries', () => {
    const config = loadConfiguration({});
    expect(config.webhooks).toEqual({
      secrets: [DEV_WEBHOOK_SECRET],
      usingDevSecret: true,
      toleranceSeconds: 300,
      bodyLimitBytes: 65536,
      refusalsPerSourcePerMinute: 60,
      processingBoundMs: 900000,
      processingBoundBankTransferMs: 432000000,
      reconcileIntervalMs: 30000,
    });
    expect(config.webhookDelivery).toMatchObject({ url: undefined, secrets: [DEV_WEBHOOK_SECRET], duplicateRate: 0, lossRate: 0 });
  });

  it('reads several secrets for a rotation, newest first, and lets the simulator sign with others', () => {
    const [current, previous, provider] = [secret(), secret(), secret()];
    const config = loadConfiguration({
      WEBHOOK_SECRETS: ` ${current}, ${previous} `,
      PAYMENT_SIMULATOR_WEBHOOK_SECRETS: provider,
      PAYMENT_SIMULATOR_WEBHOOK_URL: 'http://127.0.0.1:3000/v1/webhooks/payments',
      PAYMENT_SIMULATOR_WEBHOOK_DUPLICATE_RATE: '0.2',
    });
    expect(config.webhooks).toMatchObject({ secrets: [current, previous], usingDevSecret: false });
    expect(config.webhookDelivery).toMatchObject({ secrets: [provider], duplicateRate: 0.2 });
  });

  it('refuses malformed secrets, a tolerance past the library bound, rates outside 0-1, without showing the secret', () => {
    const problems = problemsOf({
      WEBHOOK_SECRETS: 'not-a-whsec-secret',
      WEBHOOK_TOLERANCE_SECONDS: '301',
      PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE: '1.5',
      PROCESSING_BOUND_MS: '10',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^WEBHOOK_SECRETS: each secret must be whsec_/),
        expect.stringMatching(/^WEBHOOK_TOLERANCE_SECONDS: /),
        expect.stringMatching(/^PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE: /),
        expect.stringMatching(/^PROCESSING_BOUND_MS: /),
      ]),
    );
    expect(problems.join('\n')).not.toContain('not-a-whsec-secret');
    expect(problemsOf({ WEBHOOK_SECRETS: `whsec_${randomBytes(8).toString('base64')}` })).toHaveLength(1);
  });

  it('never uses the published dev secret with a real store: unset means no secret (every delivery refused), set to it is refused', () => {
    const production = { ...REAL_STORE, NODE_ENV: 'development' };
    const problems = problemsOf({ ...production, WEBHOOK_SECRETS: DEV_WEBHOOK_SECRET });
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/^WEBHOOK_SECRETS: the published dev secret is refused/)]));
    expect(problemsOf({ ...REAL_STORE, NODE_ENV: 'test' })).toEqual([]);
    const unset = problemsOf(production).filter((problem) => problem.startsWith('WEBHOOK'));
    expect(unset).toEqual([]);
  });
});
