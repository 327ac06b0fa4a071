import { describe, expect, it } from '@jest/globals';
import { backoffMs } from './outbox.relay.js';

describe('outbox backoff', () => {
  it('doubles per attempt with jitter between half and all of the step', () => {
    expect(backoffMs(0, 0)).toBe(500);
    expect(backoffMs(0, 1)).toBe(1000);
    expect(backoffMs(3, 1)).toBe(8000);
  });

  it('caps at five minutes', () => {
    expect(backoffMs(30, 1)).toBe(300_000);
  });
});
