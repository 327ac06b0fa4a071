import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !/\.(int-)?spec\.ts$/.test(entry.name) ? [path] : [];
  });
}

describe('the idempotency module stays liftable', () => {
  it('imports nothing from the business modules', () => {
    const offenders = sources(here).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)]
        .map((match) => match[1])
        .filter((path) => /\/(orders|payments|ledger|outbox|privacy)\//.test(path))
        .map((path) => `${file}: ${path}`),
    );
    expect(sources(here).length).toBeGreaterThan(10);
    expect(offenders).toEqual([]);
  });
});
