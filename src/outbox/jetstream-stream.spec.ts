import { describe, expect, it } from '@jest/globals';
import { duplicateWindowMs, requiredStream, streamContradictions, subjectOf } from './jetstream-stream.js';
import { backoffMs, MAX_BACKOFF_MS } from './outbox.relay.js';

const defaults = { publishTimeoutMs: 10_000, intervalMs: 1000 };

describe('the stream the relay needs', () => {
  it('puts each event type under orders.events', () => {
    expect(subjectOf('order.completed')).toBe('orders.events.order.completed');
  });

  it('has a duplicate window longer than the longest gap between two tries of one event (timeout + backoff cap + a pass)', () => {
    // The worst retry: published at the claim, failed at the timeout, retried after the longest backoff, on the next pass.
    const longestBackoff = Math.max(...[0, 0.5, 1].map((random) => backoffMs(40, random)));
    expect(longestBackoff).toBe(MAX_BACKOFF_MS);
    const worstGap = defaults.publishTimeoutMs + longestBackoff + defaults.intervalMs;
    expect(duplicateWindowMs(defaults)).toBeGreaterThan(worstGap);
    // NATS's default window (2 min) would not cover it.
    expect(worstGap).toBeGreaterThan(120_000);
  });

  it('covers a dead relay: the claim holds the event for twice the timeout before another relay publishes it again', () => {
    const slow = { publishTimeoutMs: 600_000, intervalMs: 1000 };
    expect(duplicateWindowMs(slow)).toBeGreaterThan(2 * slow.publishTimeoutMs + slow.intervalMs);
  });

  it('accepts its own configuration and a wider one', () => {
    const required = requiredStream('ORDER_EVENTS', 1, defaults);
    expect(streamContradictions({ ...required }, required)).toEqual([]);
    expect(
      streamContradictions(
        { ...required, subjects: ['orders.>'], duplicate_window: required.duplicate_window * 2, num_replicas: 3 },
        required,
      ),
    ).toEqual([]);
  });

  it('refuses other subjects, memory storage and a short duplicate window, saying why', () => {
    const required = requiredStream('ORDER_EVENTS', 1, defaults);
    const problems = streamContradictions(
      { subjects: ['payments.>'], storage: 'memory', duplicate_window: 120e9, num_replicas: 1 },
      required,
    );
    expect(problems).toEqual([
      expect.stringContaining('do not include orders.events.>'),
      expect.stringContaining('storage is memory'),
      expect.stringMatching(/duplicate window is 120 s, shorter than the 371 s/),
    ]);
  });
});
