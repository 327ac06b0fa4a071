import { describe, expect, it } from '@jest/globals';
import { parseReconcileArgs } from './reconcile-args.js';

describe('npm run reconcile -- --from --to', () => {
  it('reads bare dates as midnight UTC and full timestamps as given, in either argument style', () => {
    expect(parseReconcileArgs(['--from', '2026-01-01', '--to=2026-01-02T12:00:00Z'])).toEqual({
      from: new Date('2026-01-01T00:00:00Z'),
      to: new Date('2026-01-02T12:00:00Z'),
    });
  });

  it('refuses a missing, malformed, reversed or unknown argument with the usage', () => {
    expect(() => parseReconcileArgs(['--from', '2026-01-01'])).toThrow(/--to is required[\s\S]*usage/);
    expect(() => parseReconcileArgs(['--from', 'yesterday', '--to', '2026-01-02'])).toThrow(/not an ISO 8601 date/);
    expect(() => parseReconcileArgs(['--from', '2026-01-02', '--to', '2026-01-01'])).toThrow(/after --from/);
    expect(() => parseReconcileArgs(['--since', '2026-01-01'])).toThrow(/unknown argument/);
    expect(() => parseReconcileArgs(['--from'])).toThrow(/needs a date/);
  });
});
