import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Parser } from '@asyncapi/parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CloudEvent } from '../../src/outbox/cloud-event.js';
import { EventSubscriber } from '../../src/outbox/event-subscriber.port.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { deliver, newWebhookSecret } from '../support/webhooks.js';

/** Stoplight's DiagnosticSeverity.Error (the parser's diagnostics type it from a copy of its own). */
const ERROR = 0;
const DOCUMENT = fileURLToPath(new URL('../../docs/asyncapi.yaml', import.meta.url));

/** One validator per event type, compiled from the parsed document's message payloads ($refs resolved by the parser). */
async function loadContract(): Promise<{ errors: string[]; addresses: string[]; validators: Map<string, ValidateFunction> }> {
  const { document, diagnostics } = await new Parser().parse(readFileSync(DOCUMENT, 'utf8'));
  const errors = diagnostics
    .filter((diagnostic) => Number(diagnostic.severity) === ERROR)
    .map((diagnostic) => `${diagnostic.path.join('.')}: ${diagnostic.message}`);
  const validators = new Map<string, ValidateFunction>();
  // The parser annotates schemas with x-parser-* keys: not JSON Schema keywords, so not strict here.
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  for (const message of document?.allMessages() ?? []) validators.set(message.name()!, ajv.compile(message.payload()!.json()));
  return {
    errors,
    addresses: document
      ? document
          .allChannels()
          .all()
          .map((channel) => channel.address()!)
      : [],
    validators,
  };
}

describe('docs/asyncapi.yaml: the contract for consumers', () => {
  it('parses as AsyncAPI 3.0 without errors; one channel per event type, named by its subject', async () => {
    const { errors, addresses, validators } = await loadContract();
    expect(errors).toEqual([]);
    expect([...validators.keys()].sort()).toEqual(
      ['order.captured', 'order.completed', 'order.expired', 'order.refund_failed', 'order.refunded', 'order.voided'].sort(),
    );
    expect(addresses.sort()).toEqual([...validators.keys()].map((type) => `orders.events.${type}`).sort());
  });

  it('rejects an event that breaks it (the check can fail)', async () => {
    const { validators } = await loadContract();
    const validate = validators.get('order.refunded')!;
    expect(validate({ specversion: '1.0', id: 'evt_1', type: 'order.refunded', data: { amountMinor: '10' } })).toBe(false);
  });
});

describe('every event the flows emit validates against docs/asyncapi.yaml', () => {
  let t: TestApp;
  const received: CloudEvent[] = [];
  const secret = newWebhookSecret();

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_events_contract', env: { WEBHOOK_SECRETS: secret } });
    await t.app.get(EventSubscriber).subscribe('contract-test', async (batch) => {
      received.push(...batch.map((delivered) => delivered.event));
    });
  });
  afterAll(async () => t?.close());

  const post = (path: string, key: string, body?: object) => t.http().post(path).set(auth()).set('Idempotency-Key', key).send(body);

  it('orders, capture and void, refunds (one failing late), expiry, cancel by key: each event has a schema and validates', async () => {
    const paid = (await post('/v1/orders', 'k-paid', orderBody()).expect(201)).body.id as string;
    await post(`/v1/orders/${paid}/refunds`, 'r-paid', { amountMinor: 500, reason: 'requested_by_customer' }).expect(201);
    // A refund the provider fails after answering it (its refund.failed webhook): order.refund_failed.
    const failing = (
      await post(`/v1/orders/${paid}/refunds`, 'r-fails', { amountMinor: 1000, reason: 'requested_by_customer' }).expect(201)
    ).body as { id: string; providerRefundId: string };
    const failure = {
      id: 'evt_refund_failed_contract',
      type: 'refund.failed',
      timestamp: new Date(),
      data: {
        refundKey: `refund:${failing.id}`,
        providerRefundId: failing.providerRefundId,
        amountMinor: 1000,
        currency: 'USD',
        failureReason: 'expired_or_canceled_card',
      },
    };
    await deliver(t, secret, failure as never).expect(200);
    // An authorization the provider let lapse, found by a capture: order.expired.
    const lapsed = (
      await post('/v1/orders', 'k-lapsed', orderBody({ capture: 'manual', paymentMethod: { token: 'tok_auth_expires' } })).expect(201)
    ).body.id as string;
    await post(`/v1/orders/${lapsed}/capture`, 'c-lapsed', {}).expect(422);
    const captured = (await post('/v1/orders', 'k-capture', orderBody({ capture: 'manual' })).expect(201)).body.id as string;
    await post(`/v1/orders/${captured}/capture`, 'c-capture', {}).expect(200);
    const voided = (await post('/v1/orders', 'k-void', orderBody({ capture: 'manual' })).expect(201)).body.id as string;
    await post(`/v1/orders/${voided}/void`, 'v-void').expect(200);
    await post('/v1/orders', 'k-cancel', orderBody()).expect(201);
    await t.http().post('/v1/idempotency-keys/k-cancel/cancel').set(auth()).expect(200);

    const relay = t.app.get(OutboxRelay);
    while ((await relay.tick()) > 0);
    expect(received.length).toBe(await t.db.collection('outbox_events').countDocuments({}));
    expect(new Set(received.map((event) => event.type))).toEqual(
      new Set(['order.completed', 'order.refunded', 'order.refund_failed', 'order.captured', 'order.voided', 'order.expired']),
    );
    expect(received.some((event) => event.type === 'order.refunded' && event.data.reason === 'key_canceled')).toBe(true);

    const { validators } = await loadContract();
    for (const event of received) {
      const validate = validators.get(event.type);
      expect(validate).toBeDefined();
      expect({ type: event.type, valid: validate!(event), errors: validate!.errors ?? null }).toEqual({
        type: event.type,
        valid: true,
        errors: null,
      });
    }
  });
});
