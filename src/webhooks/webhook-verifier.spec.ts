import { describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes } from 'node:crypto';
import { WebhookSigner } from '../payment-simulator/webhook-signer.js';
import { readPaymentEvent } from './payment-event.js';
import { WebhookVerifier } from './webhook-verifier.js';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
// The library checks the timestamp against Date.now(): signed a moment ago, in whole seconds.
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const body = JSON.stringify({ type: 'charge.succeeded', timestamp: NOW.toISOString(), data: {} });

/** Headers as Node's headersDistinct holds them: every copy, in an array. */
const distinct = (headers: object) =>
  Object.fromEntries(
    Object.entries(headers as Record<string, string | string[] | undefined>).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, [value].flat()]],
    ),
  );
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('WebhookVerifier (Standard Webhooks over the raw bytes; signed by the standardwebhooks library)', () => {
  const current = secret();
  const previous = secret();
  const verifier = new WebhookVerifier([current, previous], 300);

  it('verifies a signature by any listed secret, among several signatures, and returns the id and signing time', () => {
    for (const signers of [[current], [previous], [secret(), current]]) {
      const headers = new WebhookSigner(signers).sign('evt_1', body, NOW);
      expect(verifier.verify(bytes(body), distinct(headers))).toEqual({ id: 'evt_1', signedAt: NOW });
    }
  });

  it('refuses another secret, another body, another id, a v2 signature, and a missing header', () => {
    const headers = new WebhookSigner([current]).sign('evt_1', body, NOW);
    const refused = (raw: string, given: object) => {
      try {
        verifier.verify(bytes(raw), distinct(given));
        return null;
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(refused(body, new WebhookSigner([secret()]).sign('evt_1', body, NOW))).toBe('webhook_signature_invalid');
    expect(refused(`${body} `, headers)).toBe('webhook_signature_invalid');
    expect(refused(body, { ...headers, 'webhook-id': 'evt_2' })).toBe('webhook_signature_invalid');
    expect(refused(body, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') })).toBe(
      'webhook_signature_invalid',
    );
    expect(refused(body, { ...headers, 'webhook-signature': undefined })).toBe('webhook_signature_invalid');
    expect(refused(body, { ...headers, 'webhook-id': 'evt 1' })).toBe('webhook_signature_invalid');
    expect(() => new WebhookVerifier([], 300).verify(bytes(body), distinct(headers))).toThrow(/does not verify/);
  });

  it('refuses a repeated id, timestamp or signature header with 400, even when one copy is valid (SEC4-09)', () => {
    const headers = new WebhookSigner([current]).sign('evt_1', body, NOW);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const junk = name === 'webhook-signature' ? `v1,${randomBytes(32).toString('base64')}` : headers[name];
      expect(() => verifier.verify(bytes(body), distinct({ ...headers, [name]: [headers[name], junk] }))).toThrow(
        expect.objectContaining({ code: 'webhook_header_repeated' }),
      );
    }
  });

  it('verifies the bytes as received: a body that is not UTF-8, signed over its bytes, verifies; its decoded text does not', () => {
    const raw = Buffer.concat([bytes('{"type":"x","b":"'), Buffer.from([0xff, 0xfe]), bytes('"}')]);
    const timestamp = String(NOW.getTime() / 1000);
    const key = Buffer.from(current.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key).update(`evt_1.${timestamp}.`).update(raw).digest('base64');
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` };
    expect(verifier.verify(raw, distinct(headers)).id).toBe('evt_1');
    expect(() => verifier.verify(bytes(raw.toString('utf8')), distinct(headers))).toThrow(/does not verify/);
  });

  it('refuses a timestamp outside the configured tolerance, either way, with its own code', () => {
    const strict = new WebhookVerifier([current], 60);
    const at = (offsetSeconds: number) =>
      distinct(new WebhookSigner([current]).sign('evt_1', body, new Date(NOW.getTime() + offsetSeconds * 1000)));
    expect(strict.verify(bytes(body), at(-55)).id).toBe('evt_1');
    expect(() => strict.verify(bytes(body), at(-65))).toThrow(expect.objectContaining({ code: 'webhook_timestamp_out_of_tolerance' }));
    expect(() => strict.verify(bytes(body), at(65))).toThrow(expect.objectContaining({ code: 'webhook_timestamp_out_of_tolerance' }));
  });
});

describe('readPaymentEvent', () => {
  const data = { chargeKey: 'charge:ord_0123456789abcdef01234567', chargeId: 'ch_1', amountMinor: 2500, currency: 'USD', sequence: 2 };

  it('reads a charge event, and an unknown type without reading its data', () => {
    const event = readPaymentEvent('evt_1', { type: 'charge.succeeded', timestamp: NOW.toISOString(), data });
    expect(event).toEqual({ id: 'evt_1', type: 'charge.succeeded', occurredAt: NOW, charge: { ...data, failureReason: null } });
    expect(readPaymentEvent('evt_2', { type: 'payout.paid', timestamp: NOW.toISOString(), data: 'anything' }).charge).toBeNull();
  });

  it('refuses what is off the documented shape', () => {
    const bad = [
      null,
      [],
      { type: 'Charge Succeeded', timestamp: NOW.toISOString(), data },
      { type: 'charge.succeeded', timestamp: 'soon', data },
      { type: 'charge.succeeded', timestamp: NOW.toISOString(), data: { ...data, chargeKey: 'charge:ord_x' } },
      { type: 'charge.succeeded', timestamp: NOW.toISOString(), data: { ...data, amountMinor: 1.5 } },
      { type: 'charge.succeeded', timestamp: NOW.toISOString(), data: { ...data, currency: 'usd' } },
      { type: 'charge.succeeded', timestamp: NOW.toISOString(), data: { ...data, sequence: 0 } },
      { type: 'charge.failed', timestamp: NOW.toISOString(), data },
    ];
    for (const document of bad) {
      expect(() => readPaymentEvent('evt_1', document)).toThrow(expect.objectContaining({ code: 'webhook_event_invalid' }));
    }
  });
});
