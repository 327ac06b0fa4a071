import { describe, expect, it } from '@jest/globals';
import { backoffMs, consumerLost } from './jetstream-consumer.js';

describe('backoffMs', () => {
  it('is 1 s, doubling, capped at 30 s', () => {
    expect([0, 1, 2, 3, 5, 6, 50].map(backoffMs)).toEqual([1000, 1000, 2000, 4000, 16_000, 30_000, 30_000]);
  });
});

describe('consumerLost', () => {
  it('is the reports of a consumer or stream gone, not the routine ones', () => {
    expect(consumerLost({ type: 'consumer_deleted', code: 409, description: 'Consumer Deleted' })).toBe(true);
    expect(consumerLost({ type: 'consumer_not_found', name: 'c', stream: 's', count: 1 })).toBe(true);
    expect(consumerLost({ type: 'stream_not_found', name: 's' })).toBe(true);
    expect(consumerLost({ type: 'heartbeats_missed', count: 2 })).toBe(false);
    expect(consumerLost({ type: 'no_responders', code: 503 })).toBe(false);
  });
});
