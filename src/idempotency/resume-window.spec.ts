import { describe, expect, it } from '@jest/globals';
import { PaymentProviderUnavailableError } from '../payments/payment-gateway.port.js';
import { IdempotencyKeyReusedError } from './idempotency.errors.js';
import { resumableUntil } from './resume-window.js';

const now = new Date('2026-01-01T00:00:00Z');

describe('resumableUntil', () => {
  it('leaves an attempt failed by a provider outage (503 + Retry-After) to its client for the window', () => {
    expect(resumableUntil(new PaymentProviderUnavailableError(2), now, 300_000)).toEqual(new Date(now.getTime() + 300_000));
  });

  it('gives anything else to the reaper at once: a crash-like error, a domain error without Retry-After', () => {
    expect(resumableUntil(new Error('boom'), now, 300_000)).toBeNull();
    expect(resumableUntil(new IdempotencyKeyReusedError(), now, 300_000)).toBeNull();
  });

  it('has no window when it is configured to 0', () => {
    expect(resumableUntil(new PaymentProviderUnavailableError(2), now, 0)).toBeNull();
  });
});
