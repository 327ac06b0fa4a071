import { describe, expect, it } from '@jest/globals';
import { KEY_WINDOW_MS, keyStep } from './key-window.js';

const now = new Date('2026-12-04T12:00:00Z');
const sentAgo = (ms: number) => new Date(now.getTime() - ms);
const charge = { kind: 'charge' as const, params: {} };

describe('keyStep: by a journal entry age, send, look up, or cancel', () => {
  it('inside the window a request repeats the call under its key, the reaper tries to cancel the key', () => {
    const entry = { call: charge, firstSentAt: sentAgo(KEY_WINDOW_MS - 1) };
    expect(keyStep(entry, now, 'request')).toEqual({ step: 'send' });
    expect(keyStep(entry, now, 'reaper')).toEqual({ step: 'cancel' });
  });

  it('past the window nobody sends first: both look up; with nothing found a request sends, the reaper cancels', () => {
    const entry = { call: charge, firstSentAt: sentAgo(KEY_WINDOW_MS) };
    expect(keyStep(entry, now, 'request')).toEqual({ step: 'look_up', ifNothing: 'send' });
    expect(keyStep(entry, now, 'reaper')).toEqual({ step: 'look_up', ifNothing: 'cancel' });
  });

  it('a canceled key is canceled at any age, for anyone', () => {
    for (const age of [0, KEY_WINDOW_MS * 2]) {
      const entry = { call: { kind: 'canceled' as const }, firstSentAt: sentAgo(age) };
      expect(keyStep(entry, now, 'request')).toEqual({ step: 'canceled' });
      expect(keyStep(entry, now, 'reaper')).toEqual({ step: 'canceled' });
    }
  });
});
