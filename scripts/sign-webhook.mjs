#!/usr/bin/env node
// Signs a provider webhook by hand, as the payment provider would: prints the
// three Standard Webhooks headers for a body, one `name: value` a line, ready
// for `curl -H`. The secret is the first of WEBHOOK_SECRETS (from the
// environment or ./.env, as the service reads it), else the dev secret the
// service verifies with when WEBHOOK_SECRETS is unset (never in production).
//
//   node scripts/sign-webhook.mjs '{"type":"charge.failed",...}' [--id evt_1] [--at <unix seconds>]
//   node scripts/sign-webhook.mjs --print-secret
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';

// The same bytes as DEV_WEBHOOK_SECRET in src/config/webhooks.config.ts (test/docs/sign-webhook.spec.ts keeps them equal).
export const DEV_WEBHOOK_SECRET = `whsec_${Buffer.alloc(24, 'dev-only-webhook-secret').toString('base64')}`;

export function signingSecret(env = process.env) {
  const first = (env.WEBHOOK_SECRETS ?? '')
    .split(',')
    .map((part) => part.trim())
    .find(Boolean);
  return first ?? DEV_WEBHOOK_SECRET;
}

export function signedHeaders(secret, body, id = `evt_${randomUUID()}`, at = new Date()) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { id: { type: 'string' }, at: { type: 'string' }, 'print-secret': { type: 'boolean' } },
  });
  if (existsSync('.env')) process.loadEnvFile('.env');
  const secret = signingSecret();
  if (values['print-secret']) {
    process.stdout.write(`${secret}\n`);
  } else if (positionals.length !== 1) {
    process.stderr.write("usage: node scripts/sign-webhook.mjs '<json body>' [--id <webhook-id>] [--at <unix seconds>]\n");
    process.exit(2);
  } else {
    const at = values.at ? new Date(Number(values.at) * 1000) : new Date();
    for (const [name, value] of Object.entries(signedHeaders(secret, positionals[0], values.id, at))) {
      process.stdout.write(`${name}: ${value}\n`);
    }
  }
}
