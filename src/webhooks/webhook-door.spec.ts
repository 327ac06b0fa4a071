import { describe, expect, it } from '@jest/globals';
import { MAX_WEBHOOK_SOURCES, sourceKey, WebhookRefusals } from './webhook-door.js';

describe('WebhookRefusals', () => {
  const LIMIT = 3;

  it('refuses a source once it has spent its budget in the window, and not after the window rolls', () => {
    let now = 0;
    const refusals = new WebhookRefusals(LIMIT, 60_000, () => now);
    for (let i = 0; i < LIMIT; i += 1) refusals.refused('203.0.113.7');
    expect(refusals.blockedFor('203.0.113.7')).toBe(60);
    expect(refusals.blockedFor('203.0.113.8')).toBe(0);
    now = 60_000;
    expect(refusals.blockedFor('203.0.113.7')).toBe(0);
  });

  it('still admits a source not yet seen after a flood of other sources filled the table (they used to share one budget, and the flood blocked every new provider address)', () => {
    const refusals = new WebhookRefusals(LIMIT, 60_000, () => 0);
    for (let i = 0; i < MAX_WEBHOOK_SOURCES + 60; i += 1) refusals.refused(`2001:db8:${i.toString(16)}::1`);
    expect(refusals.blockedFor('198.51.100.10')).toBe(0);
    refusals.refused('198.51.100.10');
    expect(refusals.blockedFor('198.51.100.10')).toBe(0);
    // A source tracked before the table filled keeps its count.
    const early = new WebhookRefusals(LIMIT, 60_000, () => 0);
    for (let i = 0; i < LIMIT; i += 1) early.refused('192.0.2.1');
    for (let i = 0; i < MAX_WEBHOOK_SOURCES + 60; i += 1) early.refused(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    expect(early.blockedFor('192.0.2.1')).toBeGreaterThan(0);
  });

  it('counts an IPv6 host by its /64, so rotating the low bits of one block does not give it fresh budgets', () => {
    const refusals = new WebhookRefusals(LIMIT, 60_000, () => 0);
    for (let i = 1; i <= LIMIT; i += 1) refusals.refused(`2001:db8:aa:bb::${i.toString(16)}`);
    expect(refusals.blockedFor('2001:0db8:00aa:00bb:ffff:1:2:3')).toBeGreaterThan(0);
    expect(refusals.blockedFor('2001:db8:aa:bc::1')).toBe(0);
  });
});

describe('sourceKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '::ffff:203.0.113.7'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:db8:aa:bb:cc:dd:ee:ff', '2001:db8:aa:bb::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['unknown', 'unknown'],
  ])('%s -> %s', (source, key) => {
    expect(sourceKey(source)).toBe(key);
  });
});
