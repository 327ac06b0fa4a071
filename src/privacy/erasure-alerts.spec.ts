import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

interface Rule {
  alert: string;
  expr: string;
}

const rules = (
  parse(readFileSync(new URL('../../ops/alerts.rules.yml', import.meta.url), 'utf8')) as { groups: { rules: Rule[] }[] }
).groups.flatMap((group) => group.rules);

/** Issue 49 item 6: the fast-path calls an erasure depends on, and a full Redis, are each read by an alert. */
describe('alerts on the Redis calls erasures depend on', () => {
  it('an erasure refused before its transaction (call="guard") alerts, a full Redis included', () => {
    const guard = rules.filter((rule) => /call="guard"/.test(rule.expr));
    expect(guard.map((rule) => rule.alert)).toEqual(['IdempotencyErasureRefusedByCache']);
    expect(guard[0].expr).toMatch(/result=~"[^"]*\bfull\b/);
  });

  it('a full Redis (result="full" on store) alerts', () => {
    expect(rules.filter((rule) => /store/.test(rule.expr) && /result="full"/.test(rule.expr)).map((rule) => rule.alert)).toEqual([
      'IdempotencyCacheFull',
    ]);
  });
});
