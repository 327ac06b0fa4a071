import { describe, expect, it } from '@jest/globals';
import { journalRetentionSeconds } from './stripe-request.journal.js';

const DAY = 86400;

describe('journalRetentionSeconds', () => {
  it('with the default settings (record 1 day, tombstone 30 days): 32 days', () => {
    expect(journalRetentionSeconds({ ttlSeconds: DAY, tombstoneSeconds: 30 * DAY })).toBe(32 * DAY);
  });

  it.each([
    [60, 120],
    [DAY, 30 * DAY],
    [7 * DAY, 90 * DAY],
  ])(
    'outlives the last moment a key can reach the adapter (record %i s, tombstone %i s), with a day for a reaper that was down',
    (ttlSeconds, tombstoneSeconds) => {
      // The record is written before its journal entry; reaped (or finished) by the time it is purged; its key then refused
      // by the idempotency tombstone. The latest anything asks: record TTL + tombstone after the entry was first sent.
      const lastAsked = ttlSeconds + tombstoneSeconds;
      expect(journalRetentionSeconds({ ttlSeconds, tombstoneSeconds }) - lastAsked).toBe(DAY);
      // And longer than Stripe keeps the key (24 h): past it only the journal knows what was sent.
      expect(journalRetentionSeconds({ ttlSeconds, tombstoneSeconds })).toBeGreaterThan(DAY);
    },
  );
});
