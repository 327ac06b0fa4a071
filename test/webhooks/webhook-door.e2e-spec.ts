// The webhook door (security review 3, SEC4-04 and SEC4-09): a stranger is
// refused on its headers, before its body is read or hashed; a source that
// keeps failing is refused on sight; a repeated webhook header is refused
// even when one copy is valid; the signature is checked over the bytes
// received. Each asserted on the answer and on the inbox (nothing written).
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { createHmac } from 'node:crypto';
import { request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { WebhookSigner } from '../../src/payment-simulator/webhook-signer.js';
import { startApp, type TestApp } from '../support/test-app.js';
import { newWebhookSecret } from '../support/webhooks.js';

const REFUSALS_PER_SOURCE = 8;
const BODY_LIMIT = 4096;

interface RawAnswer {
  text: string;
  status: number;
  /** From the end of the headers we sent to the server's first byte. */
  answeredAfterMs: number;
}

/** Sends `head` (headers only: the declared body never comes) and waits for the first answer bytes (at most `waitMs`). */
function headersOnly(port: number, head: string, waitMs = 3_000): Promise<RawAnswer | null> {
  return new Promise((resolve) => {
    let sentAt = 0;
    const socket = connect(port, '127.0.0.1', () => socket.write(head, () => (sentAt = Date.now())));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, waitMs);
    socket.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      const text = chunk.toString('utf8');
      socket.destroy();
      resolve({ text, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), answeredAfterMs: Date.now() - sentAt });
    });
    socket.on('error', () => undefined);
  });
}

describe('the webhook door', () => {
  let t: TestApp;
  let port: number;
  const secret = newWebhookSecret();
  const body = JSON.stringify({ type: 'payout.paid', timestamp: new Date().toISOString(), data: {} });

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_webhook_door',
      env: {
        WEBHOOK_SECRETS: secret,
        WEBHOOK_BODY_LIMIT_BYTES: String(BODY_LIMIT),
        WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE: String(REFUSALS_PER_SOURCE),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  beforeEach(async () => {
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
  });
  afterAll(async () => t.close());

  const post = (headers: object, raw: string = body) =>
    t
      .http()
      .post('/v1/webhooks/payments')
      .set('content-type', 'application/json')
      .set(headers as Record<string, string>)
      .send(raw);
  const head = (headers: string) =>
    `POST /v1/webhooks/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n${headers}\r\n`;
  const inboxRows = () => t.db.collection('webhook_inbox').countDocuments();

  it('answers a stranger on its headers at once, without waiting for the body it declared (it waited for the request timeout)', async () => {
    const signed = new WebhookSigner([secret]).sign('evt_door_1', body, new Date());
    const hourOld = new WebhookSigner([secret]).sign('evt_door_1', body, new Date(Date.now() - 3_600_000));
    const cases: [string, string, number, string][] = [
      ['no webhook headers', '', 401, 'webhook_signature_invalid'],
      [
        'a timestamp an hour old',
        `webhook-id: evt_door_1\r\nwebhook-timestamp: ${hourOld['webhook-timestamp']}\r\nwebhook-signature: ${hourOld['webhook-signature']}\r\n`,
        401,
        'webhook_timestamp_out_of_tolerance',
      ],
      [
        'a signature that is not v1,<base64 of 32 bytes>',
        `webhook-id: evt_door_1\r\nwebhook-timestamp: ${signed['webhook-timestamp']}\r\nwebhook-signature: v1,short\r\n`,
        401,
        'webhook_signature_invalid',
      ],
    ];
    for (const [what, headers, status, code] of cases) {
      const answer = await headersOnly(port, head(headers));
      expect({ what, status: answer?.status, code: /"code":"([a-z_]+)"/.exec(answer?.text ?? '')?.[1] }).toEqual({ what, status, code });
      expect(answer!.answeredAfterMs).toBeLessThan(1_000);
    }
    // A declared body over the webhook limit, well signed otherwise: 413 before a byte of it is read.
    const big = await headersOnly(
      port,
      head(
        `webhook-id: evt_door_1\r\nwebhook-timestamp: ${signed['webhook-timestamp']}\r\nwebhook-signature: ${signed['webhook-signature']}\r\n`,
      ).replace('Content-Length: 3000', `Content-Length: ${BODY_LIMIT + 1}`),
    );
    expect(big?.status).toBe(413);
    expect(await inboxRows()).toBe(0);
  });

  it('refuses a repeated webhook-signature, -id or -timestamp with 400 even when one copy is valid (one valid among junk was 200), writing nothing', async () => {
    const signed = new WebhookSigner([secret]).sign('evt_dup_1', body, new Date());
    const junk = `v1,${Buffer.alloc(32, 7).toString('base64')}`;
    for (const [name, copies] of [
      ['webhook-signature', [signed['webhook-signature'], junk]],
      ['webhook-id', [signed['webhook-id'], signed['webhook-id']]],
      ['webhook-timestamp', [signed['webhook-timestamp'], signed['webhook-timestamp']]],
    ] as const) {
      const res = await post({ ...signed, [name]: [...copies] });
      expect({ name, status: res.status, code: res.body.code }).toEqual({ name, status: 400, code: 'webhook_header_repeated' });
    }
    expect(await inboxRows()).toBe(0);
    // The same delivery with one copy of each is accepted.
    expect((await post(signed)).status).toBe(200);
    expect(await inboxRows()).toBe(1);
  });

  it('verifies the bytes received: a body that is not UTF-8, signed over its bytes, verifies and is refused as not I-JSON (it failed the signature after decoding)', async () => {
    const raw = Buffer.concat([
      Buffer.from('{"type":"payout.paid","timestamp":"2026-12-01T00:00:00Z","data":"'),
      Buffer.from([0xff]),
      Buffer.from('"}'),
    ]);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key).update(`evt_bytes_1.${timestamp}.`).update(raw).digest('base64');
    // Node's own client, so the bytes go out as they are (no client-side re-encoding).
    const res = await new Promise<{ status: number; body: { code?: string } }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/webhooks/payments',
          headers: {
            'content-type': 'application/json',
            'content-length': raw.length,
            'webhook-id': 'evt_bytes_1',
            'webhook-timestamp': timestamp,
            'webhook-signature': `v1,${mac}`,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        },
      );
      req.on('error', reject);
      req.end(raw);
    });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 'json_not_i_json' });
    expect(await inboxRows()).toBe(0);
  });

  it(`refuses a source on sight (429 + Retry-After, body unread) after ${REFUSALS_PER_SOURCE} refusals in a minute`, async () => {
    // Earlier tests of this file spent part of the budget: spend the rest with bodies that fail the signature.
    for (let i = 0; i < REFUSALS_PER_SOURCE; i++) {
      const res = await post({
        'webhook-id': `evt_junk_${i}`,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32, i).toString('base64')}`,
      });
      if (res.status === 429) break;
      expect(res.status).toBe(401);
    }
    const answer = await headersOnly(port, head(''));
    expect(answer?.status).toBe(429);
    expect(answer!.text).toMatch(/^retry-after: \d+/im);
    expect(answer!.answeredAfterMs).toBeLessThan(1_000);
    expect(await inboxRows()).toBe(0);
  });

  it('a genuine signed delivery from a source over its budget is still accepted: the budget is spent only on what fails (SEC5-06)', async () => {
    // The test above left this source (127.0.0.1) over its budget: strangers behind the provider's address.
    expect((await headersOnly(port, head('')))?.status).toBe(429);
    const genuine = JSON.stringify({ type: 'payout.paid', timestamp: new Date().toISOString(), data: {} });
    const signed = new WebhookSigner([secret]).sign('evt_genuine_after_junk', genuine, new Date());
    const res = await post(signed, genuine);
    expect(res.status).toBe(200);
    expect(await inboxRows()).toBe(1);
    // A forgery with well-formed headers is still refused on its signature, never recorded.
    const forged = await post({ ...signed, 'webhook-id': 'evt_forged_after_junk' }, genuine);
    expect(forged.status).toBe(401);
    expect(await inboxRows()).toBe(1);
  });

  it('warns once when deliveries come through a proxy TRUST_PROXY does not name (every sender is then one source)', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await post({ 'x-forwarded-for': '198.51.100.7' });
      await post({ 'x-forwarded-for': '198.51.100.8' });
      const warnings = warn.mock.calls.filter(([message]) => /TRUST_PROXY does not name/.test(String(message)));
      expect(warnings).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }
  });
});
